"""An asyncio service with jmslike.aio: a worker takes orders from a queue in a transaction and publishes a
confirmation for each, while the main coroutine sends the orders and reads the confirmations with
``async for``. A failed order is rolled back and comes again, flagged redelivered.

Run it against any broker jmslike speaks (``python -m jmslike.conformance.brokers run activemq`` starts one
and prints its URL and account):

    python examples/aio_orders.py activemq://127.0.0.1:61613 admin admin
"""

from __future__ import annotations

import asyncio
import sys
import uuid

from jmslike.aio import Connection, ConnectionFactory, Session
from jmslike.messages import TextMessage


async def worker(
    factory: ConnectionFactory, user: str | None, password: str | None, names: tuple[str, str], count: int
) -> None:
    """Transacted: an order is consumed and its confirmation sent in one transaction, or neither. A service of
    its own, with its own connection (on Artemis before 2.36 that also keeps clear of ARTEMIS-3509, see
    docs/artemis.md)."""
    orders_name, confirmations_name = names
    async with await factory.createConnection(user, password) as connection:
        await connection.start()
        await serve(connection, orders_name, confirmations_name, count)


async def serve(connection: Connection, orders_name: str, confirmations_name: str, count: int) -> None:
    session = await connection.createSession(Session.SESSION_TRANSACTED)
    orders = await session.createConsumer(session.createQueue(orders_name))
    confirmations = session.createProducer(session.createTopic(confirmations_name))
    failed_once = False
    done = 0
    async for order in orders:
        assert isinstance(order, TextMessage)
        if order.getText() == "order-2" and not failed_once:
            failed_once = True  # pretend the first attempt failed: roll back, the order comes again
            await session.rollback()
            continue
        reply = session.createTextMessage(f"confirmed {order.getText()}")
        reply.setBooleanProperty("retried", order.getJMSRedelivered())
        await confirmations.send(reply)
        await session.commit()
        done += 1
        if done == count:
            break
    await session.close()


async def main(url: str, user: str | None, password: str | None) -> int:
    run = uuid.uuid4().hex[:8]  # fresh names, so the example can run again on the same broker
    orders_name, confirmations_name, count = f"orders-{run}", f"confirmations/{run}", 4
    factory = ConnectionFactory(url)
    async with await factory.createConnection(user, password) as connection:
        await connection.start()
        session = await connection.createSession(Session.AUTO_ACKNOWLEDGE)
        confirmations = await session.createConsumer(session.createTopic(confirmations_name))
        producer = session.createProducer(session.createQueue(orders_name))
        for n in range(count):
            await producer.send(session.createTextMessage(f"order-{n}"))
        working = asyncio.create_task(
            worker(factory, user, password, (orders_name, confirmations_name), count)
        )
        seen = []
        async for message in confirmations:
            assert isinstance(message, TextMessage)
            retried = " (after a rollback)" if message.getBooleanProperty("retried") else ""
            print(f"{message.getText()}{retried}")
            seen.append(message.getText())
            if len(seen) == count:
                break
        await working
    expected = [f"confirmed order-{n}" for n in range(count)]
    if seen != expected:
        print(f"expected {expected}, got {seen}", file=sys.stderr)
        return 1
    return 0


async def bounded(url: str, user: str | None, password: str | None) -> int:
    """main(), given a minute: a broker that stops answering ends the example with a message, not a hang."""
    try:
        async with asyncio.timeout(60):
            return await main(url, user, password)
    except TimeoutError:
        print("no answer from the broker within 60 s", file=sys.stderr)
        for task in asyncio.all_tasks():
            task.print_stack(file=sys.stderr)
        return 1


if __name__ == "__main__":
    args = sys.argv[1:]
    if not args:
        print(__doc__)
        sys.exit(2)
    sys.exit(
        asyncio.run(bounded(args[0], args[1] if len(args) > 1 else None, args[2] if len(args) > 2 else None))
    )
