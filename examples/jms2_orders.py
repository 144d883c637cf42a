"""A JMS 2.0 program ported line by line: the simplified API (JMSContext), receiveBody, a durable consumer,
delivery delay. The Java original is in the comments, each line above its Python form.

Run it against any broker jmslike speaks (``python -m jmslike.conformance.brokers run activemq`` starts
one and prints its URL and account):

    python examples/jms2_orders.py activemq://127.0.0.1:61613 admin admin
"""

from __future__ import annotations

import sys
import uuid

from jmslike import (
    ConnectionFactory,
    DeliveryMode,
    JMSContext,
    UnsupportedFeatureRuntimeException,
)


def main(url: str, user: str | None, password: str | None) -> int:
    run = uuid.uuid4().hex[:8]  # fresh names, so the example can run again on the same broker
    # ConnectionFactory cf = new ActiveMQConnectionFactory("tcp://127.0.0.1:61616");
    factory = ConnectionFactory(url)
    # try (JMSContext context = cf.createContext(user, password, JMSContext.CLIENT_ACKNOWLEDGE)) {
    with factory.createContext(user, password, JMSContext.CLIENT_ACKNOWLEDGE) as context:
        # context.setClientID("orders-service-" + run);
        context.setClientID(f"orders-service-{run}")
        # Queue orders = context.createQueue("orders");  Topic audit = context.createTopic("audit");
        orders = context.createQueue(f"example.orders.{run}")
        audit = context.createTopic(f"example.audit.{run}")
        # JMSConsumer auditLog = context.createDurableConsumer(audit, "audit-log", "region = 'EU'", false);
        audit_log = context.createDurableConsumer(audit, "audit-log", "region = 'EU'", False)
        # JMSProducer producer = context.createProducer()
        #     .setDeliveryMode(DeliveryMode.PERSISTENT).setProperty("region", "EU");
        producer = (
            context.createProducer().setDeliveryMode(DeliveryMode.PERSISTENT).setProperty("region", "EU")
        )
        # producer.send(orders, "order-1");
        producer.send(orders, "order-1")
        # producer.send(audit, Map.of("order", "order-1", "amount", 42));
        producer.send(audit, {"order": "order-1", "amount": 42})
        # JMSConsumer consumer = context.createConsumer(orders);
        consumer = context.createConsumer(orders)
        # String order = consumer.receiveBody(String.class, 5000);
        order = consumer.receiveBody(str, 5000)
        # Map<String, Object> entry = auditLog.receiveBody(Map.class, 5000);
        entry = audit_log.receiveBody(dict, 5000)
        # context.acknowledge();
        context.acknowledge()
        print(f"order: {order}; audit entry: {entry}")
        if order != "order-1" or entry != {"order": "order-1", "amount": 42}:
            return 1
        try:
            # producer.setDeliveryDelay(1000).send(orders, "reminder");
            producer.setDeliveryDelay(1000).send(orders, "reminder")
            # String reminder = consumer.receiveBody(String.class, 10000);
            reminder = consumer.receiveBody(str, 10_000)
            context.acknowledge()
            print(f"delayed: {reminder}")
        except UnsupportedFeatureRuntimeException as refused:  # RabbitMQ: no scheduled delivery
            print(f"delivery delay refused here: {refused}")
            reminder = "reminder"
        # auditLog.close(); context.unsubscribe("audit-log");
        audit_log.close()
        context.unsubscribe("audit-log")
        return 0 if reminder == "reminder" else 1


if __name__ == "__main__":
    args = sys.argv[1:]
    if not args:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(args[0], args[1] if len(args) > 1 else None, args[2] if len(args) > 2 else None))
