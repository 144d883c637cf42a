/*
 * A real JMS client for jmslike's interop tests: ActiveMQ's Java client over OpenWire, or Artemis's JMS client
 * over its core protocol.
 *
 * Compiled and run by tests/interop/java_peer.py (javac against the JMS API jar of the client, no build tool).
 * The connection factory is the class named by $JMSPEER_FACTORY (default ActiveMQ's), built by reflection from
 * its URL constructor, so this file depends on the JMS API alone; $JMSPEER_USER and $JMSPEER_PASSWORD, when
 * set, are the account (kept out of argv, which error messages quote).
 * Every command prints exactly one JSON line on stdout; errors go to stderr with a non-zero exit code.
 *
 *   send    URL DEST SPEC                  send one message, print what the client assigned
 *   receive URL DEST TIMEOUT_MS [--selector=SEL] [--read=NAME:TYPE,...]
 *                                          receive one message, print a description (or {"received":false});
 *                                          --read adds "reads": the typed getter (getIntProperty ...) of
 *                                          each named property, as JMS conversion rules allow, or the error
 *   reply   URL DEST TIMEOUT_MS CORRELATE  receive a request, answer to its JMSReplyTo with a TextMessage
 *                                          "reply:" + request text; CORRELATE is "message-id" (the reply's
 *                                          JMSCorrelationID is the request's JMSMessageID) or
 *                                          "correlation-id" (it is the request's JMSCorrelationID)
 *   request URL DEST TIMEOUT_MS SPEC       send SPEC (its "replyTo" says where replies go; "temp-queue"
 *                                          makes a temporary queue), then wait for one reply there
 *
 * DEST is a queue name, or "queue:NAME" / "topic:NAME". SPEC is a JSON object, or "-" to read it from stdin:
 *
 *   {"type": "text" | "bytes" | "map" | "message",
 *    "text": "...", "bytes": "<base64>", "map": {"name": ["int", 3], ...},
 *    "properties": {"name": ["boolean" | "byte" | "short" | "int" | "long" | "float" | "double" | "String", value]},
 *    "correlationId": "...", "jmsType": "...", "priority": 0..9, "deliveryMode": "PERSISTENT" | "NON_PERSISTENT",
 *    "timeToLive": ms, "replyTo": "queue:NAME" | "topic:NAME" | "temp-queue"}
 *
 * Map fields may also be "char" and "byte[]" (base64). Numbers may be given as JSON numbers or strings
 * (for "NaN", "Infinity"). A description of a received message:
 *
 *   {"received": true, "class": "TextMessage", "text": "...", "bytes": "<base64>",
 *    "map": {"name": {"type": "Integer", "value": 3}}, "properties": {"name": {"type": "String", "value": "x"}},
 *    "messageId": ..., "correlationId": ..., "jmsType": ..., "priority": 4, "deliveryMode": "PERSISTENT",
 *    "redelivered": false, "replyTo": "queue://name", "destination": "queue://name", "timestamp": ...,
 *    "expiration": 0}
 *
 * Names are sorted, output is ASCII (non-ASCII as \\u escapes), floats that JSON cannot hold are strings.
 * No libraries beyond the JMS API and the client: the JSON reader and writer are below.
 */

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import javax.jms.BytesMessage;
import javax.jms.Connection;
import javax.jms.ConnectionFactory;
import javax.jms.DeliveryMode;
import javax.jms.Destination;
import javax.jms.JMSException;
import javax.jms.MapMessage;
import javax.jms.Message;
import javax.jms.MessageConsumer;
import javax.jms.MessageProducer;
import javax.jms.ObjectMessage;
import javax.jms.Session;
import javax.jms.StreamMessage;
import javax.jms.TextMessage;

public final class JmsPeer {

    private JmsPeer() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            usage("no command");
        }
        String command = args[0];
        switch (command) {
            case "send" -> {
                need(args, 4);
                System.out.println(send(args[1], args[2], spec(args[3])));
            }
            case "receive" -> {
                if (args.length < 4) {
                    usage("receive takes URL DEST TIMEOUT_MS [--selector=SEL] [--read=NAME:TYPE,...]");
                }
                String selector = null;
                String reads = "";
                for (int i = 4; i < args.length; i++) {
                    if (args[i].startsWith("--selector=")) {
                        selector = args[i].substring("--selector=".length());
                    } else if (args[i].startsWith("--read=")) {
                        reads = args[i].substring("--read=".length());
                    } else {
                        usage("unknown receive option " + args[i]);
                    }
                }
                System.out.println(receive(args[1], args[2], Long.parseLong(args[3]), selector, reads));
            }
            case "reply" -> {
                need(args, 5);
                System.out.println(reply(args[1], args[2], Long.parseLong(args[3]), args[4]));
            }
            case "request" -> {
                need(args, 5);
                System.out.println(request(args[1], args[2], Long.parseLong(args[3]), spec(args[4])));
            }
            default -> usage("unknown command " + command);
        }
        System.out.flush();
        // The ActiveMQ client may leave non-daemon threads behind for a moment; the answer is printed.
        System.exit(0);
    }

    private static void need(String[] args, int count) {
        if (args.length != count) {
            usage(args[0] + " takes " + (count - 1) + " arguments, got " + (args.length - 1));
        }
    }

    private static void usage(String problem) {
        System.err.println("JmsPeer: " + problem);
        System.err.println("usage: send URL DEST SPEC | receive URL DEST TIMEOUT_MS"
                + " | reply URL DEST TIMEOUT_MS message-id|correlation-id | request URL DEST TIMEOUT_MS SPEC");
        System.exit(2);
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> spec(String text) throws IOException {
        if (text.equals("-")) {
            text = new String(readAll(System.in), StandardCharsets.UTF_8);
        }
        Object parsed = new JsonReader(text).readDocument();
        if (!(parsed instanceof Map)) {
            throw new IllegalArgumentException("the message spec must be a JSON object");
        }
        return (Map<String, Object>) parsed;
    }

    private static byte[] readAll(InputStream in) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] buffer = new byte[8192];
        int n;
        while ((n = in.read(buffer)) > 0) {
            out.write(buffer, 0, n);
        }
        return out.toByteArray();
    }

    // -- commands ------------------------------------------------------------------------------------------

    private static Connection open(String url) throws Exception {
        String factoryClass = System.getenv().getOrDefault("JMSPEER_FACTORY", "org.apache.activemq.ActiveMQConnectionFactory");
        ConnectionFactory factory = (ConnectionFactory) Class.forName(factoryClass)
                .getConstructor(String.class).newInstance(url);
        String user = System.getenv("JMSPEER_USER");
        Connection connection = user == null
                ? factory.createConnection()
                : factory.createConnection(user, System.getenv("JMSPEER_PASSWORD"));
        connection.start();
        return connection;
    }

    private static Destination destination(Session session, String name) throws JMSException {
        if (name.startsWith("topic:")) {
            return session.createTopic(name.substring("topic:".length()));
        }
        if (name.startsWith("queue:")) {
            return session.createQueue(name.substring("queue:".length()));
        }
        return session.createQueue(name);
    }

    private static String send(String url, String dest, Map<String, Object> spec) throws Exception {
        Connection connection = open(url);
        try {
            Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
            Message message = build(session, spec);
            sendBuilt(session, destination(session, dest), message, spec);
            return sentInfo(message).toString();
        } finally {
            connection.close();
        }
    }

    private static String receive(String url, String dest, long timeoutMs, String selector, String reads)
            throws Exception {
        Connection connection = open(url);
        try {
            Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
            MessageConsumer consumer = session.createConsumer(destination(session, dest), selector);
            Message message = consumer.receive(timeoutMs);
            Json out = describe(message);
            if (message != null && !reads.isEmpty()) {
                Json results = new Json();
                for (String read : reads.split(",")) {
                    int colon = read.lastIndexOf(':');
                    if (colon < 1) {
                        usage("--read takes NAME:TYPE pairs, got " + read);
                    }
                    results.put(read, typedRead(message, read.substring(0, colon), read.substring(colon + 1)));
                }
                out.put("reads", results);
            }
            return out.toString();
        } finally {
            connection.close();
        }
    }

    /** The property read with the getter of {@code type}, or the exception that getter threw. */
    private static Json typedRead(Message message, String name, String type) {
        if (!List.of("boolean", "byte", "short", "int", "long", "float", "double", "String").contains(type)) {
            throw new IllegalArgumentException("--read: unknown type " + type);
        }
        try {
            Object value = switch (type) {
                case "boolean" -> message.getBooleanProperty(name);
                case "byte" -> message.getByteProperty(name);
                case "short" -> message.getShortProperty(name);
                case "int" -> message.getIntProperty(name);
                case "long" -> message.getLongProperty(name);
                case "float" -> message.getFloatProperty(name);
                case "double" -> message.getDoubleProperty(name);
                case "String" -> message.getStringProperty(name);
                default -> throw new AssertionError(type);
            };
            return typedValue(value);
        } catch (JMSException | RuntimeException e) {
            // JMS conversion failures: MessageFormatException, NumberFormatException (JMS 1.1 3.5.4)
            return new Json().put("error", e.getClass().getSimpleName());
        }
    }

    private static String reply(String url, String dest, long timeoutMs, String correlate) throws Exception {
        if (!correlate.equals("message-id") && !correlate.equals("correlation-id")) {
            usage("CORRELATE must be message-id or correlation-id, got " + correlate);
        }
        Connection connection = open(url);
        try {
            Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
            Message request = session.createConsumer(destination(session, dest)).receive(timeoutMs);
            Json result = new Json().put("request", describe(request));
            if (request == null) {
                return result.put("reply", null).toString();
            }
            if (request.getJMSReplyTo() == null) {
                throw new IllegalStateException("the request has no JMSReplyTo");
            }
            String text = request instanceof TextMessage ? ((TextMessage) request).getText() : null;
            TextMessage answer = session.createTextMessage("reply:" + text);
            answer.setJMSCorrelationID(correlate.equals("message-id")
                    ? request.getJMSMessageID() : request.getJMSCorrelationID());
            MessageProducer producer = session.createProducer(request.getJMSReplyTo());
            producer.send(answer);
            return result.put("reply", sentInfo(answer)).toString();
        } finally {
            connection.close();
        }
    }

    private static String request(String url, String dest, long timeoutMs, Map<String, Object> spec)
            throws Exception {
        if (spec.get("replyTo") == null) {
            throw new IllegalArgumentException("a request spec needs replyTo");
        }
        Connection connection = open(url);
        try {
            Session session = connection.createSession(false, Session.AUTO_ACKNOWLEDGE);
            Message message = build(session, spec);
            // Subscribe before sending, so a fast reply to a topic or a temporary queue cannot be missed.
            MessageConsumer replies = session.createConsumer(message.getJMSReplyTo());
            sendBuilt(session, destination(session, dest), message, spec);
            Json result = new Json().put("request", sentInfo(message));
            return result.put("reply", describe(replies.receive(timeoutMs))).toString();
        } finally {
            connection.close();
        }
    }

    // -- building and sending ------------------------------------------------------------------------------

    @SuppressWarnings("unchecked")
    private static Message build(Session session, Map<String, Object> spec) throws Exception {
        String type = string(spec.getOrDefault("type", "text"), "type");
        Message message;
        switch (type) {
            case "text" -> message = session.createTextMessage((String) spec.get("text"));
            case "bytes" -> {
                BytesMessage bytes = session.createBytesMessage();
                bytes.writeBytes(Base64.getDecoder().decode(string(spec.getOrDefault("bytes", ""), "bytes")));
                message = bytes;
            }
            case "map" -> {
                MapMessage map = session.createMapMessage();
                Object entries = spec.getOrDefault("map", new LinkedHashMap<String, Object>());
                for (Map.Entry<String, Object> e : ((Map<String, Object>) entries).entrySet()) {
                    map.setObject(e.getKey(), typed(e.getValue(), "map entry " + e.getKey(), true));
                }
                message = map;
            }
            case "message" -> message = session.createMessage();
            default -> throw new IllegalArgumentException("unknown message type " + type);
        }
        Object properties = spec.get("properties");
        if (properties != null) {
            for (Map.Entry<String, Object> e : ((Map<String, Object>) properties).entrySet()) {
                message.setObjectProperty(e.getKey(), typed(e.getValue(), "property " + e.getKey(), false));
            }
        }
        if (spec.get("correlationId") != null) {
            message.setJMSCorrelationID(string(spec.get("correlationId"), "correlationId"));
        }
        if (spec.get("jmsType") != null) {
            message.setJMSType(string(spec.get("jmsType"), "jmsType"));
        }
        Object replyTo = spec.get("replyTo");
        if (replyTo != null) {
            String name = string(replyTo, "replyTo");
            message.setJMSReplyTo(name.equals("temp-queue") ? session.createTemporaryQueue()
                    : destination(session, name));
        }
        return message;
    }

    private static void sendBuilt(Session session, Destination dest, Message message, Map<String, Object> spec)
            throws Exception {
        int mode = DeliveryMode.PERSISTENT;
        Object modeSpec = spec.get("deliveryMode");
        if (modeSpec != null) {
            mode = switch (string(modeSpec, "deliveryMode")) {
                case "PERSISTENT" -> DeliveryMode.PERSISTENT;
                case "NON_PERSISTENT" -> DeliveryMode.NON_PERSISTENT;
                default -> throw new IllegalArgumentException("deliveryMode: PERSISTENT or NON_PERSISTENT");
            };
        }
        int priority = spec.get("priority") == null ? Message.DEFAULT_PRIORITY
                : Integer.parseInt(number(spec.get("priority"), "priority"));
        long ttl = spec.get("timeToLive") == null ? Message.DEFAULT_TIME_TO_LIVE
                : Long.parseLong(number(spec.get("timeToLive"), "timeToLive"));
        MessageProducer producer = session.createProducer(dest);
        producer.send(message, mode, priority, ttl);
    }

    /** A [type, value] pair from the spec as the boxed Java object JMS expects. */
    private static Object typed(Object pair, String what, boolean field) {
        if (!(pair instanceof List<?> list) || list.size() != 2 || !(list.get(0) instanceof String type)) {
            throw new IllegalArgumentException(what + ": expected [type, value]");
        }
        Object value = list.get(1);
        return switch (type) {
            case "boolean" -> (Boolean) value;
            case "byte" -> Byte.valueOf(number(value, what));
            case "short" -> Short.valueOf(number(value, what));
            case "int" -> Integer.valueOf(number(value, what));
            case "long" -> Long.valueOf(number(value, what));
            case "float" -> Float.valueOf(number(value, what));
            case "double" -> Double.valueOf(number(value, what));
            case "String" -> (String) value;
            case "char" -> {
                String s = string(value, what);
                if (!field || s.length() != 1) {
                    throw new IllegalArgumentException(what + ": char is a map field type of one character");
                }
                yield Character.valueOf(s.charAt(0));
            }
            case "byte[]" -> {
                if (!field) {
                    throw new IllegalArgumentException(what + ": byte[] is not a property type");
                }
                yield Base64.getDecoder().decode(string(value, what));
            }
            default -> throw new IllegalArgumentException(what + ": unknown type " + type);
        };
    }

    private static String string(Object value, String what) {
        if (!(value instanceof String s)) {
            throw new IllegalArgumentException(what + ": expected a string");
        }
        return s;
    }

    private static String number(Object value, String what) {
        if (value instanceof JsonNumber n) {
            return n.text;
        }
        if (value instanceof String s) {
            return s;
        }
        throw new IllegalArgumentException(what + ": expected a number");
    }

    // -- describing ----------------------------------------------------------------------------------------

    private static Json sentInfo(Message message) throws JMSException {
        return new Json()
                .put("messageId", message.getJMSMessageID())
                .put("correlationId", message.getJMSCorrelationID())
                .put("timestamp", message.getJMSTimestamp())
                .put("destination", String.valueOf(message.getJMSDestination()))
                .put("replyTo", message.getJMSReplyTo() == null ? null : message.getJMSReplyTo().toString());
    }

    private static String jmsInterface(Message message) {
        if (message instanceof TextMessage) {
            return "TextMessage";
        }
        if (message instanceof BytesMessage) {
            return "BytesMessage";
        }
        if (message instanceof MapMessage) {
            return "MapMessage";
        }
        if (message instanceof StreamMessage) {
            return "StreamMessage";
        }
        if (message instanceof ObjectMessage) {
            return "ObjectMessage";
        }
        return "Message";
    }

    private static Json describe(Message message) throws JMSException {
        Json out = new Json();
        if (message == null) {
            return out.put("received", false);
        }
        out.put("received", true).put("class", jmsInterface(message));
        if (message instanceof TextMessage text) {
            out.put("text", text.getText());
        } else if (message instanceof BytesMessage bytes) {
            byte[] data = new byte[(int) bytes.getBodyLength()];
            bytes.readBytes(data);
            out.put("bytes", Base64.getEncoder().encodeToString(data));
        } else if (message instanceof MapMessage map) {
            TreeMap<String, Json> entries = new TreeMap<>();
            for (Enumeration<?> names = map.getMapNames(); names.hasMoreElements();) {
                String name = (String) names.nextElement();
                entries.put(name, typedValue(map.getObject(name)));
            }
            out.put("map", new Json(new LinkedHashMap<>(entries)));
        }
        TreeMap<String, Json> properties = new TreeMap<>();
        for (Enumeration<?> names = message.getPropertyNames(); names.hasMoreElements();) {
            String name = (String) names.nextElement();
            properties.put(name, typedValue(message.getObjectProperty(name)));
        }
        out.put("properties", new Json(new LinkedHashMap<>(properties)));
        return out
                .put("messageId", message.getJMSMessageID())
                .put("correlationId", message.getJMSCorrelationID())
                .put("jmsType", message.getJMSType())
                .put("priority", message.getJMSPriority())
                .put("deliveryMode", message.getJMSDeliveryMode() == DeliveryMode.PERSISTENT
                        ? "PERSISTENT" : "NON_PERSISTENT")
                .put("redelivered", message.getJMSRedelivered())
                .put("replyTo", message.getJMSReplyTo() == null ? null : message.getJMSReplyTo().toString())
                .put("destination", String.valueOf(message.getJMSDestination()))
                .put("timestamp", message.getJMSTimestamp())
                .put("expiration", message.getJMSExpiration());
    }

    private static Json typedValue(Object value) {
        Json out = new Json().put("type", value == null ? "null" : value.getClass().getSimpleName());
        if (value instanceof byte[] data) {
            return out.put("value", Base64.getEncoder().encodeToString(data));
        }
        if (value instanceof Character c) {
            return out.put("value", String.valueOf(c));
        }
        return out.put("value", value);
    }

    // -- JSON ----------------------------------------------------------------------------------------------

    /** A JSON number as its text, so a long or a float keeps every digit until its type is known. */
    record JsonNumber(String text) {
    }

    /** An ordered JSON object that writes itself as one line of ASCII. */
    static final class Json {
        private final Map<String, Object> fields;

        Json() {
            this(new LinkedHashMap<>());
        }

        Json(Map<String, ?> fields) {
            this.fields = new LinkedHashMap<>(fields);
        }

        Json put(String name, Object value) {
            fields.put(name, value);
            return this;
        }

        @Override
        public String toString() {
            StringBuilder out = new StringBuilder();
            write(out, this);
            return out.toString();
        }

        private static void write(StringBuilder out, Object value) {
            if (value == null) {
                out.append("null");
            } else if (value instanceof Json json) {
                out.append('{');
                boolean first = true;
                for (Map.Entry<String, Object> e : json.fields.entrySet()) {
                    if (!first) {
                        out.append(',');
                    }
                    first = false;
                    writeString(out, e.getKey());
                    out.append(':');
                    write(out, e.getValue());
                }
                out.append('}');
            } else if (value instanceof Boolean || value instanceof Byte || value instanceof Short
                    || value instanceof Integer || value instanceof Long) {
                out.append(value);
            } else if (value instanceof Float || value instanceof Double) {
                double d = ((Number) value).doubleValue();
                if (Double.isNaN(d) || Double.isInfinite(d)) {
                    writeString(out, value.toString());
                } else {
                    out.append(value); // Float.toString / Double.toString: valid JSON numbers when finite
                }
            } else {
                writeString(out, value.toString());
            }
        }

        private static void writeString(StringBuilder out, String s) {
            out.append('"');
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                switch (c) {
                    case '"' -> out.append("\\\"");
                    case '\\' -> out.append("\\\\");
                    case '\n' -> out.append("\\n");
                    case '\r' -> out.append("\\r");
                    case '\t' -> out.append("\\t");
                    default -> {
                        if (c < 0x20 || c > 0x7e) {
                            out.append(String.format("\\u%04x", (int) c));
                        } else {
                            out.append(c);
                        }
                    }
                }
            }
            out.append('"');
        }
    }

    /** Just enough of a JSON reader for message specs: objects keep their order, numbers stay text. */
    static final class JsonReader {
        private final String text;
        private int pos;

        JsonReader(String text) {
            this.text = text;
        }

        Object readDocument() {
            Object value = readValue();
            skipSpace();
            if (pos != text.length()) {
                throw error("trailing characters");
            }
            return value;
        }

        private IllegalArgumentException error(String problem) {
            return new IllegalArgumentException("bad JSON spec at offset " + pos + ": " + problem);
        }

        private void skipSpace() {
            while (pos < text.length() && Character.isWhitespace(text.charAt(pos))) {
                pos++;
            }
        }

        private char peek() {
            skipSpace();
            if (pos >= text.length()) {
                throw error("unexpected end");
            }
            return text.charAt(pos);
        }

        private void expect(char c) {
            if (peek() != c) {
                throw error("expected '" + c + "'");
            }
            pos++;
        }

        private Object readValue() {
            char c = peek();
            switch (c) {
                case '{':
                    return readObject();
                case '[':
                    return readArray();
                case '"':
                    return readString();
                default:
                    break;
            }
            for (String word : new String[] {"true", "false", "null"}) {
                if (text.startsWith(word, pos)) {
                    pos += word.length();
                    return word.equals("null") ? null : Boolean.valueOf(word);
                }
            }
            int start = pos;
            while (pos < text.length() && "+-0123456789.eE".indexOf(text.charAt(pos)) >= 0) {
                pos++;
            }
            if (start == pos) {
                throw error("unexpected character '" + c + "'");
            }
            return new JsonNumber(text.substring(start, pos));
        }

        private Map<String, Object> readObject() {
            expect('{');
            Map<String, Object> map = new LinkedHashMap<>();
            if (peek() == '}') {
                pos++;
                return map;
            }
            while (true) {
                if (peek() != '"') {
                    throw error("expected a member name");
                }
                String name = readString();
                expect(':');
                map.put(name, readValue());
                if (peek() == ',') {
                    pos++;
                } else {
                    expect('}');
                    return map;
                }
            }
        }

        private List<Object> readArray() {
            expect('[');
            List<Object> list = new ArrayList<>();
            if (peek() == ']') {
                pos++;
                return list;
            }
            while (true) {
                list.add(readValue());
                if (peek() == ',') {
                    pos++;
                } else {
                    expect(']');
                    return list;
                }
            }
        }

        private String readString() {
            expect('"');
            StringBuilder out = new StringBuilder();
            while (true) {
                if (pos >= text.length()) {
                    throw error("unterminated string");
                }
                char c = text.charAt(pos++);
                if (c == '"') {
                    return out.toString();
                }
                if (c != '\\') {
                    out.append(c);
                    continue;
                }
                if (pos >= text.length()) {
                    throw error("unterminated escape");
                }
                char e = text.charAt(pos++);
                switch (e) {
                    case '"', '\\', '/' -> out.append(e);
                    case 'b' -> out.append('\b');
                    case 'f' -> out.append('\f');
                    case 'n' -> out.append('\n');
                    case 'r' -> out.append('\r');
                    case 't' -> out.append('\t');
                    case 'u' -> {
                        if (pos + 4 > text.length()) {
                            throw error("short \\u escape");
                        }
                        out.append((char) Integer.parseInt(text.substring(pos, pos + 4), 16));
                        pos += 4;
                    }
                    default -> throw error("bad escape \\" + e);
                }
            }
        }
    }
}
