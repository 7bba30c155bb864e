"""The two courses: a public layout (room, gates, pads, drone, limits) and the ranges of what a seed hides."""

from __future__ import annotations

from typing import Any, NamedTuple


class Gate(NamedTuple):
    """A square gate hanging in the air; it is passed along `normal` (horizontal, unit length)."""

    center: tuple[float, float, float]
    normal: tuple[float, float, float]
    size: float  # side of the square opening, metres
    frame: float  # width of the frame around the opening, metres


class Pad(NamedTuple):
    """A disc on the floor."""

    center: tuple[float, float, float]
    radius: float


class Drone(NamedTuple):
    """The nominal airframe: what a controller may know. The payload and the weak motor are hidden."""

    mass: float  # kg, without payload
    max_thrust: float  # N, all four nominal motors at full speed
    radius: float  # m, collision sphere
    arm: float  # m, centre to motor
    inertia: tuple[float, float, float]  # kg m^2, diagonal
    motor_lag: float  # s, first-order time constant
    yaw_moment: float  # m, rotor drag torque per newton of thrust
    drag: float  # N / (m/s)^2, quadratic drag on airspeed


class Limits(NamedTuple):
    """Command clipping and crash thresholds."""

    max_tilt_cmd: float  # rad, roll and pitch commands are clipped to +/- this
    max_yaw_rate: float  # rad/s
    max_rate: float  # rad/s, body-rate commands
    crash_tilt: float  # rad, beyond this the flight crashes (`tilt`)
    touchdown_speed: float  # m/s, faster touchdowns crash (`floor`)


class Hidden(NamedTuple):
    """Ranges the generator draws a flight's hidden values from (public knowledge, like a datasheet)."""

    payload: tuple[float, float]  # kg
    weak_factor: tuple[float, float]  # thrust factor of the one weak motor
    wind: tuple[float, float]  # m/s, steady wind speed
    gust_peak: tuple[float, float]  # m/s, peak of an ordinary gust
    sharp_peak: tuple[float, float]  # m/s, peak of the sharp gust
    gust_duration: tuple[float, float]  # s, ordinary gust
    sharp_duration: tuple[float, float]  # s, sharp gust
    gust_window: tuple[float, float]  # s, gust start times are drawn in here
    jitter: float  # m, start x and y offset is drawn in +/- this
    yaw_jitter: float  # rad, start yaw is drawn in +/- this


class Course(NamedTuple):
    """One course: everything but the seed."""

    name: str
    tick: float  # s, one control step
    substeps: int  # physics substeps per tick (tick / substeps <= 5 ms)
    time_limit: float  # s
    gravity: float
    room: tuple[float, float, float]  # x, y, z extents from the origin corner
    gates: tuple[Gate, ...]
    start: Pad
    land: Pad
    drone: Drone
    limits: Limits
    hidden: Hidden

    def info(self) -> dict[str, Any]:
        """The JSON-serialisable course info a controller's constructor receives (no hidden values)."""
        return {
            "name": self.name,
            "tick": self.tick,
            "time_limit": self.time_limit,
            "gravity": self.gravity,
            "room": list(self.room),
            "gates": [
                {"center": list(g.center), "normal": list(g.normal), "size": g.size, "frame": g.frame}
                for g in self.gates
            ],
            "pads": {
                "start": {"center": list(self.start.center), "radius": self.start.radius},
                "land": {"center": list(self.land.center), "radius": self.land.radius},
            },
            "drone": {
                "mass": self.drone.mass,
                "max_thrust": self.drone.max_thrust,
                "radius": self.drone.radius,
                "arm": self.drone.arm,
            },
            "limits": self.limits._asdict(),
        }


_DRONE = Drone(
    mass=0.6,
    max_thrust=16.0,
    radius=0.1,
    arm=0.12,
    inertia=(0.0035, 0.0035, 0.006),
    motor_lag=0.03,
    yaw_moment=0.016,
    drag=0.04,
)
# The hard course's payload hangs in a box: more drag.
_HARD_DRONE = _DRONE._replace(drag=0.06)
_LIMITS = Limits(max_tilt_cmd=0.6, max_yaw_rate=3.0, max_rate=8.0, crash_tilt=1.2, touchdown_speed=1.0)


def _gates(size: float, heights: tuple[float, float, float]) -> tuple[Gate, ...]:
    return (
        Gate((3.0, 1.0, heights[0]), (1.0, 0.0, 0.0), size, 0.05),
        Gate((5.0, 3.0, heights[1]), (0.0, 1.0, 0.0), size, 0.05),
        Gate((3.0, 5.0, heights[2]), (-1.0, 0.0, 0.0), size, 0.05),
    )


COURSES: dict[str, Course] = {
    "easy": Course(
        name="easy",
        tick=0.01,
        substeps=2,
        time_limit=25.0,
        gravity=9.81,
        room=(6.0, 6.0, 3.0),
        gates=_gates(0.60, (1.2, 1.4, 1.2)),
        start=Pad((1.0, 1.0, 0.0), 0.3),
        land=Pad((1.0, 5.0, 0.0), 0.3),
        drone=_DRONE,
        limits=_LIMITS,
        hidden=Hidden(
            payload=(0.0, 0.15),
            weak_factor=(0.85, 0.95),
            wind=(0.0, 1.5),
            gust_peak=(1.0, 2.5),
            sharp_peak=(2.0, 3.0),
            gust_duration=(0.8, 2.0),
            sharp_duration=(0.25, 0.4),
            gust_window=(1.0, 20.0),
            jitter=0.05,
            yaw_jitter=0.2,
        ),
    ),
    "hard": Course(
        name="hard",
        tick=0.01,
        substeps=2,
        time_limit=15.0,
        gravity=9.81,
        room=(6.0, 6.0, 3.0),
        gates=_gates(0.42, (1.2, 1.7, 0.9)),
        start=Pad((1.0, 1.0, 0.0), 0.3),
        land=Pad((1.0, 5.0, 0.0), 0.3),
        drone=_HARD_DRONE,
        limits=_LIMITS,
        hidden=Hidden(
            payload=(0.15, 0.35),
            weak_factor=(0.80, 0.92),
            wind=(1.0, 3.0),
            gust_peak=(5.0, 8.0),
            sharp_peak=(7.0, 9.0),
            gust_duration=(0.5, 1.2),
            sharp_duration=(0.3, 0.6),
            gust_window=(1.5, 11.0),
            jitter=0.05,
            yaw_jitter=0.2,
        ),
    ),
}


def course(name: str) -> Course:
    """The course called `name` ("easy" or "hard")."""
    try:
        return COURSES[name]
    except KeyError:
        raise ValueError(f"unknown course {name!r}; choose one of: {', '.join(COURSES)}") from None
