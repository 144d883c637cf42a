"""The SIGKILL soak: ``python -m jmslike.conformance soak --brokers ... --kills N --report DIR``.

Traffic runs the whole time — a synchronous and an asynchronous (CompletionListener) producer, each sending
a seeded mix of PERSISTENT and NON_PERSISTENT messages to two queues and a topic; consumers in
CLIENT_ACKNOWLEDGE mode (a queue, a durable subscription) and in transacted mode (the other queue, another
durable subscription) — while the broker is SIGKILLed ``N`` times, each at a random moment (seeded: a random
pause of traffic between kills, so kills land mid-send, mid-ack and mid-commit), then restarted. After the
last kill the traffic heals, stops, and every endpoint is drained. The invariant checker (conformance/checker.py)
then judges the whole operation log: a lost acknowledged PERSISTENT message, an unflagged duplicate within one
broker lifetime, a broken order... is a fail, unless the expectations table lists that exact behaviour class
for the broker (RabbitMQ: an acknowledged message back after a kill, flagged). Its counts — acknowledged, in
doubt, recovered, lost, delivered again flagged / unflagged — are the result's note in the report.

It is not part of the main job (50 kills take about 4 minutes per broker); docs/conformance.md has the
results and why CI does not run it yet.
"""

from __future__ import annotations

import random
import threading

from jmslike.conformance.suite.context import Context
from jmslike.conformance.suite.helpers import wait_until
from jmslike.conformance.suite.model import ScenarioInfo
from jmslike.conformance.suite.registry import PlainScenario
from jmslike.conformance.suite.traffic import Traffic, sent_at_least

SOAK_ID = "faults.sigkill-soak"
#: Traffic between two kills, in seconds: drawn from the run's seed.
GAP_S = (0.3, 2.5)
#: After each restart, sends the producers must confirm before the next kill (the traffic healed).
HEALED_SENDS = 10


def soak_scenario(kills: int) -> PlainScenario:
    """The soak as a per-mode scenario (run it in kill mode), SIGKILLing the broker ``kills`` times."""
    if kills < 1:
        raise ValueError(f"--kills must be at least 1, got {kills}")
    info = ScenarioInfo(
        id=SOAK_ID,
        category="faults",
        rule=f"{kills} broker SIGKILLs under load: nothing acknowledged is lost, nothing unflagged comes twice (I1-I10)",
        section="JMS 1.1 §4.4 (reliability), §4.10; JMS 2.0 §7.3 (asynchronous send)",
        strength="MUST",
        kind="per-mode",
        faults=("K",),
        timeout_s=60.0 + 20.0 * kills,
        doc=__doc__ or "",
    )

    def run(ctx: Context) -> None:
        rng = random.Random(f"{ctx.seed}:{SOAK_ID}:{ctx.kind}")
        traffic = Traffic(ctx, count=1_000_000, interval_s=0.02, soak=True, max_ops=1_000_000)
        traffic.start()
        pause = threading.Event()
        for kill in range(1, kills + 1):
            wait_until(
                sent_at_least(traffic, traffic.sent + HEALED_SENDS), 60, f"traffic to flow before kill {kill}"
            )
            pause.wait(rng.uniform(*GAP_S))  # where in the traffic the kill lands: the soak's random moment
            fault = traffic.oplog.fault(f"SIGKILL {kill} of {kills}")
            ctx.restart()
            fault.ok()
        wait_until(
            sent_at_least(traffic, traffic.sent + HEALED_SENDS), 60, "traffic to flow after the last kill"
        )
        traffic.stop_producers()
        traffic.finish(ctx, timeout_s=90.0)
        result = traffic.check(heal_bound_s=30.0)
        stats = result.stats
        ctx.note(
            f"{kills} kills; sends {stats['sends']}: acknowledged {stats['acknowledged']}, in doubt "
            f"{stats['in_doubt']} (recovered {stats['recovered']}), lost {stats['lost']}; deliveries "
            f"{stats['receives']}, again flagged {stats['again_flagged']} / unflagged {stats['again_unflagged']} "
            f"(seed {ctx.seed})"
        )
        traffic.assert_clean(f"{kills} SIGKILLs under load", result)

    return PlainScenario(info, run)
