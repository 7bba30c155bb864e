// The honest reference controller in JavaScript: the twin of honest.py, step for step.
//
// Cascaded position -> velocity -> attitude with integral action. It knows only the course info
// and the observations: the hidden payload is measured by the thrust at lift-off, the weak motor,
// the wind and the gusts are met by feedback (an integral on the velocity error).

const CRUISE = 2.0; // m/s between gates
const THROUGH = 1.3; // m/s through a gate
const APPROACH = 0.9; // m, straight run before a gate
const EXIT = 0.5; // m, straight run after a gate
const CLIMB = 1.0; // m, height over the start pad
const CORNER = 0.8; // m/s at the turn onto a gate's line

// IEEE remainder, as Python's math.remainder: x - n*y with n the nearest integer (ties to even).
export function remainder(x, y) {
  const q = x / y;
  let n = Math.round(q);
  if (Math.abs(q - Math.trunc(q)) === 0.5 && n % 2 !== 0) n -= 1;
  return x - n * y;
}

export default class Controller {
  constructor(info) {
    this.g = info.gravity;
    this.tick = info.tick;
    this.maxThrust = info.drone.max_thrust;
    this.maxTilt = info.limits.max_tilt_cmd;
    this.mass = info.drone.mass; // replaced by the lift-off estimate
    const start = info.pads.start.center;
    const land = info.pads.land.center;
    this.land = land;
    // Waypoints: [point, speed to fly the segment that ends there, gate index it belongs to].
    const route = [[[start[0], start[1], CLIMB], 1.0, -1]];
    info.gates.forEach((gate, k) => {
      const c = gate.center;
      const n = gate.normal;
      route.push([[c[0] - APPROACH * n[0], c[1] - APPROACH * n[1], c[2]], CRUISE, k]);
      route.push([[c[0] + EXIT * n[0], c[1] + EXIT * n[1], c[2]], THROUGH, k]);
    });
    route.push([[land[0], land[1], CLIMB], CRUISE, 3]);
    this.route = route;
    this.segment = 0;
    this.prevPoint = [start[0], start[1], 0.0];
    this.phase = "ground";
    this.ramp = 0.5 * this.mass * this.g;
    this.integral = [0.0, 0.0, 0.0];
    this.yaw0 = null;
  }

  step(obs) {
    const { pos, vel, att } = obs;
    if (this.yaw0 === null) this.yaw0 = att[2];
    const yawRate = -2.0 * remainder(att[2] - this.yaw0, 2.0 * Math.PI);
    if (this.phase === "ground") {
      // Ramp the thrust until the drone lifts: the thrust then is its weight (mass estimate).
      if (pos[2] > 0.02) {
        this.mass = (this.ramp - 0.3) / this.g;
        this.phase = "fly";
      } else {
        this.ramp += 12.0 * this.tick;
        return { thrust: this.ramp, roll: 0.0, pitch: 0.0, yaw_rate: yawRate };
      }
    }
    const vDes = this.velocityTarget(pos, obs.gate);
    const acc = [0.0, 0.0, 0.0];
    for (let i = 0; i < 3; i++) {
      const err = vDes[i] - vel[i];
      this.integral[i] = Math.max(-4.0, Math.min(4.0, this.integral[i] + 1.5 * err * this.tick));
      acc[i] = 3.5 * err + this.integral[i];
    }
    return this.attitude(acc, att[2], yawRate);
  }

  velocityTarget(pos, gateIndex) {
    if (this.phase === "land") {
      const dx = this.land[0] - pos[0];
      const dy = this.land[1] - pos[1];
      return [1.5 * dx, 1.5 * dy, pos[2] > 0.4 ? -0.7 : -0.35];
    }
    let a, b, speed, gate, length, u, along;
    // Advance along the route: a segment ends when its end point is passed (and, for a gate's
    // exit, when the gate is counted).
    for (;;) {
      a = this.prevPoint;
      [b, speed, gate] = this.route[this.segment];
      const ab = [b[0] - a[0], b[1] - a[1], b[2] - a[2]];
      length = Math.sqrt(ab[0] * ab[0] + ab[1] * ab[1] + ab[2] * ab[2]) || 1e-9;
      u = [ab[0] / length, ab[1] / length, ab[2] / length];
      along = (pos[0] - a[0]) * u[0] + (pos[1] - a[1]) * u[1] + (pos[2] - a[2]) * u[2];
      let passed = along >= length - 0.05;
      if (passed && gate >= 0 && this.route[this.segment - 1][2] === gate && gate < 3) {
        passed = gateIndex > gate; // the exit segment ends only once the gate counts
      }
      if (!passed) break;
      if (this.segment + 1 >= this.route.length) {
        this.phase = "land";
        return this.velocityTarget(pos, gateIndex);
      }
      this.prevPoint = b;
      this.segment += 1;
    }
    along = Math.min(along, length);
    const closest = [a[0] + u[0] * along, a[1] + u[1] * along, a[2] + u[2] * along];
    const remaining = length - along;
    // Slow down towards the end of the route (the landing pad) and towards a gate's approach.
    let v = speed;
    if (this.segment + 1 >= this.route.length) {
      v = Math.min(v, 0.2 + 1.0 * remaining);
    } else if (this.route[this.segment][2] === this.route[this.segment + 1][2]) {
      v = Math.min(v, CORNER + 1.0 * remaining);
    }
    v = Math.max(0.0, v);
    return [0, 1, 2].map((i) => v * u[i] + 2.5 * (closest[i] - pos[i]));
  }

  attitude(acc, yaw, yawRate) {
    const ax = acc[0];
    const ay = acc[1];
    const az = Math.max(acc[2] + this.g, 0.3 * this.g);
    // World -> heading frame.
    const c = Math.cos(yaw);
    const s = Math.sin(yaw);
    const fx = c * ax + s * ay;
    const fy = -s * ax + c * ay;
    const total = Math.sqrt(fx * fx + fy * fy + az * az);
    const pitch = Math.atan2(fx, az);
    const roll = Math.asin(Math.max(-1.0, Math.min(1.0, -fy / total)));
    const tilt = this.maxTilt;
    return {
      thrust: Math.max(0.0, Math.min(this.maxThrust, this.mass * total)),
      roll: Math.max(-tilt, Math.min(tilt, roll)),
      pitch: Math.max(-tilt, Math.min(tilt, pitch)),
      yaw_rate: yawRate,
    };
  }
}
