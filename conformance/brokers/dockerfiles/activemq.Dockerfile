# ActiveMQ Classic from Debian's package, as jmslike's process launcher runs it: the docker launcher mounts the
# generated conf/ at /jmslike/conf and a named volume at /jmslike/data, and runs the JVM directly (PID 1, so
# `docker stop` is a SIGTERM to the broker's shutdown hook and `docker kill` a crash). XStream, Jettison and
# XPP3 are installed so STOMP `transformation: jms-map-json` works (MapMessages with Java peers).
ARG BASE
FROM ${BASE}
RUN apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      activemq default-jre-headless libxstream-java libjettison-java libxpp3-java \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /jmslike/conf /jmslike/data /jmslike/tmp
LABEL org.jmslike.image="activemq"
