# ActiveMQ Artemis from the distribution ARTEMIS_HOME names (copied into the build context as artemis/): no
# registry has it for us. The docker launcher runs `artemis create` once into a mounted directory, configures
# it on the host with the process launcher's rules, and runs bin/artemis (which execs the JVM: PID 1).
ARG BASE
FROM ${BASE}
RUN apt-get update -q \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends default-jre-headless \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /jmslike/instance
COPY artemis /opt/artemis
LABEL org.jmslike.image="artemis"
