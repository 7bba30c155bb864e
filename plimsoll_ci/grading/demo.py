"""The grading half of `plimsoll-ci demo`: the reference controllers in the strongest sandbox.

The honest controller flies fresh flights; the cheater (which carries the generator and the
practice seeds) flies the practice set and the same fresh flights. Its practice score minus its
fresh score exposes the memorizing. No seed value is printed: the fresh set
is shown by its commitment only.
"""

from __future__ import annotations

from pathlib import Path

PREFERENCE = ("gvisor", "docker", "process")  # strongest first


def best_provider() -> tuple[str, list[str]]:
    """The strongest provider that can start here, and why each stronger one cannot."""
    from plimsoll_ci import sandbox

    skipped = []
    for provider in PREFERENCE:
        ok, why = sandbox.available(provider)
        if ok:
            return provider, skipped
        skipped.append(f"{provider}: {why or 'not available'}")
    return "process", skipped


def run(flights: int = 8, course: str = "easy") -> dict:
    """Grade honest and cheater; print one line per grading; return the scores by name."""
    import sim
    from plimsoll_ci import sandbox
    from plimsoll_ci.grading import fresh
    from plimsoll_ci.grading.run import Request, Seed, grade

    provider, skipped = best_provider()
    tier = sandbox.configured_tier(provider)
    for s in skipped:
        print(f"   (not using {s})")
    print(f"   sandbox: {provider} (configured tier {tier}); the simulator and every seed stay "
          "outside it")
    fs = fresh.draw(max(1, flights))
    print(f"   fresh set: {len(fs.seeds)} seeds drawn now, commitment {fresh.commit(fs)[:16]}… "
          "(committed before any flight; seeds never printed)")
    controllers = Path(sim.__file__).parent / "controllers"
    fresh_seeds = [Seed(f"fresh:{i + 1}", v, False) for i, v in enumerate(fs.seeds)]
    practice = [Seed(f"practice:{i + 1}", v, False) for i, v in enumerate(sim.PRACTICE_SEEDS)]
    scores: dict[str, tuple[int, int]] = {}
    plan = (("honest", "fresh", fresh_seeds), ("cheater", "practice", practice),
            ("cheater", "fresh", fresh_seeds))
    for name, label, seeds in plan:
        graded = grade(Request(controller=str(controllers / f"{name}.py"), course=course,
                               seeds=seeds, provider=provider))
        if graded.result is None:
            print(f"   {name:8s} on {label:8s}: refused ({len(graded.refused)} sealed findings)")
            continue
        r = graded.result
        scores[f"{name}/{label}"] = (r["landed"], r["total"])
        summary = r.get("code_check_summary") or []
        checks = ("code checks: " + "; ".join(x.split(" (")[0] for x in summary)
                  if summary else "no code check fired")
        print(f"   {name:8s} on {label:8s}: landed {r['landed']:2d}/{r['total']:<2d} "
              f"tier {r['tier']}, {r['timing']['wall_s']:.1f} s. {checks}")
    if "cheater/practice" in scores and "cheater/fresh" in scores:
        (lp, tp), (lf, tf) = scores["cheater/practice"], scores["cheater/fresh"]
        gap = lp / tp - lf / tf
        print(f"   practice vs fresh: the cheater lands {lp}/{tp} on practice and {lf}/{tf} on "
              f"fresh flights; a gap of {gap:.0%} says it memorized the practice set")
    return scores
