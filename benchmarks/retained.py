"""``python -m benchmarks.retained --broker activemq|rabbitmq``: what retained publications cost.

Launches the broker with our launchers and prints, as medians of one run: a plain PERSISTENT send and a
retained one (both synchronous, one topic, no subscriber), ``requestUpdate()`` over 1, 20 and 100 retained
topics matched by one wildcard, and three threads each making 8 retained sends to the same topic.
Numbers on a shared machine are noisy; docs/retained.md quotes one run.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections.abc import Callable

from jmslike import Connection, ConnectionFactory, MessageConsumer, Session
from jmslike.conformance.brokers import launch


def _median_ms(action: Callable[[int], None], rounds: int) -> float:
    samples = []
    for i in range(rounds):
        start = time.perf_counter()
        action(i)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def run(kind: str, sends: int) -> None:
    broker = launch(kind)
    try:
        url = broker.url + (f"?management_url={broker.management_url}" if broker.management_url else "")

        def connect() -> Connection:
            connection = ConnectionFactory(url).createConnection(broker.user, broker.password)
            connection.start()
            return connection

        connection = connect()
        session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
        producer = session.createProducer(session.createTopic("bench/retained/one"))
        plain = _median_ms(lambda i: producer.send(session.createTextMessage(f"m{i}")), sends)
        retained = _median_ms(lambda i: producer.send(session.createTextMessage(f"m{i}"), retain=True), sends)
        print(f"{kind}: plain PERSISTENT send {plain:.1f} ms, retained PERSISTENT send {retained:.1f} ms")
        for topics in (1, 20, 100):
            for i in range(topics):
                target = session.createProducer(session.createTopic(f"bench/retained/many{topics}/{i}"))
                target.send(session.createTextMessage("x"), retain=True)
            reader = connect()
            subscriber = reader.createSession(False, Session.AUTO_ACKNOWLEDGE).createConsumer(
                session.createTopic(f"bench/retained/many{topics}/#"), onRequestOnly=True
            )
            counts: list[int] = []

            def ask(_: int, consumer: MessageConsumer = subscriber, seen: list[int] = counts) -> None:
                seen.append(consumer.requestUpdate())

            took = _median_ms(ask, 5)
            assert set(counts) == {topics}, counts
            print(f"{kind}: requestUpdate over {topics} topics {took:.1f} ms")
            reader.close()

        def worker(n: int) -> None:
            own = connect()
            own_session = own.createSession(False, Session.AUTO_ACKNOWLEDGE)
            own_producer = own_session.createProducer(own_session.createTopic("bench/retained/contended"))
            for i in range(8):
                own_producer.send(own_session.createTextMessage(f"w{n}-{i}"), retain=True)
            own.close()

        start = time.perf_counter()
        threads = [threading.Thread(target=worker, args=(n,)) for n in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        print(f"{kind}: 3 publishers x 8 retained sends to one topic {time.perf_counter() - start:.2f} s")
        connection.close()
    finally:
        broker.close()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.retained", description=__doc__)
    parser.add_argument("--broker", default="activemq,rabbitmq", help="comma list: activemq, rabbitmq")
    parser.add_argument("--sends", type=int, default=50, help="sequential sends per kind of send")
    options = parser.parse_args()
    for kind in options.broker.split(","):
        run(kind.strip(), options.sends)


if __name__ == "__main__":
    main()
