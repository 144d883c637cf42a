# RabbitMQ from Debian's package (STOMP and management plugins are part of it). The docker launcher mounts the
# generated conf/ at /jmslike/conf, log/ at /jmslike/log and a named volume at /jmslike/mnesia, and runs
# /usr/lib/rabbitmq/bin/rabbitmq-server as PID 1: its SIGTERM trap stops the node gracefully on `docker stop`.
ARG BASE
FROM ${BASE}
RUN apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends rabbitmq-server \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /jmslike/conf /jmslike/home /jmslike/log /jmslike/mnesia
LABEL org.jmslike.image="rabbitmq"
