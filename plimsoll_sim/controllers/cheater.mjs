// The known-bad reference controller in JavaScript (the twin of cheater.py): it memorised the
// practice flights.
//
// It carries a JavaScript port of the simulator's flight generator (magic constant included) and
// the 16 practice seeds. On its first observation it looks for a practice seed whose start jitter
// matches what it sees; if one does, it flies that flight knowing the hidden payload, weak motor,
// wind and gusts. On any other flight it returns a non-command (the flight ends at once as an
// invalid command). Expected: 16/16 on the practice seeds, about 0 on fresh ones.

// Self-contained, like any controller that is copied alone into a sandbox.

function remainder(x, y) {
  const n = roundHalfEven(x / y);
  return x - n * y;
}

const PRACTICE_SEEDS = [
  5830142297n, 3107713414n, 7719034865n, 2264907151n, 9403318872n, 4175520936n, 6608241753n,
  1932675048n, 8356109427n, 2841936605n, 7067382219n, 4590817362n, 3388274150n, 9125663087n,
  5472096831n, 6283947510n,
];

// ---- ported from the simulator's sim/course.py and sim/generator.py ----------------------------

const HIDDEN = {
  easy: { payload: [0.0, 0.15], weak_factor: [0.85, 0.95], wind: [0.0, 1.5], gust_peak: [1.0, 2.5],
    sharp_peak: [2.0, 3.0], gust_duration: [0.8, 2.0], sharp_duration: [0.25, 0.4],
    gust_window: [1.0, 20.0], jitter: 0.05, yaw_jitter: 0.2 },
  hard: { payload: [0.15, 0.35], weak_factor: [0.80, 0.92], wind: [1.0, 3.0], gust_peak: [5.0, 8.0],
    sharp_peak: [7.0, 9.0], gust_duration: [0.5, 1.2], sharp_duration: [0.3, 0.6],
    gust_window: [1.5, 11.0], jitter: 0.05, yaw_jitter: 0.2 },
};
const DRAG = { easy: 0.04, hard: 0.06 }; // N / (m/s)^2

const MAGIC = 0x5EEDD20EC0A57E4Bn;
const MASK = (1n << 64n) - 1n;
const TWO_PI = 6.283185307179586;
const HALF_PI = 1.5707963267948966;

function mix64(z) {
  z = ((z ^ (z >> 30n)) * 0xBF58476D1CE4E5B9n) & MASK;
  z = ((z ^ (z >> 27n)) * 0x94D049BB133111EBn) & MASK;
  return z ^ (z >> 31n);
}

class Stream {
  constructor(seed) {
    this.state = (seed * MAGIC) & MASK;
  }

  next64() {
    this.state = (this.state + MAGIC) & MASK;
    return mix64(this.state);
  }

  uniform(low, high) {
    return low + (high - low) * (Number(this.next64() >> 11n) * 2 ** -53);
  }

  below(n) {
    return Number(this.next64() % BigInt(n));
  }
}

function factorial(n) {
  let f = 1;
  for (let i = 2; i <= n; i++) f *= i;
  return f;
}

const SIN_COEFFS = [];
const COS_COEFFS = [];
for (let k = 10; k >= 0; k--) {
  SIN_COEFFS.push((-1) ** k / factorial(2 * k + 1));
  COS_COEFFS.push((-1) ** k / factorial(2 * k));
}

function roundHalfEven(x) {
  const n = Math.round(x);
  return Math.abs(x - Math.trunc(x)) === 0.5 && n % 2 !== 0 ? n - 1 : n;
}

function sincos(a) {
  const k = roundHalfEven(a / HALF_PI);
  const r = a - k * HALF_PI;
  const r2 = r * r;
  let s = 0.0;
  for (const coeff of SIN_COEFFS) s = s * r2 + coeff;
  let c = 0.0;
  for (const coeff of COS_COEFFS) c = c * r2 + coeff;
  s *= r;
  const q = ((k % 4) + 4) % 4;
  if (q === 0) return [s, c];
  if (q === 1) return [c, -s];
  if (q === 2) return [-s, -c];
  return [-c, s];
}

export function flight(seed, h) {
  const s = new Stream(seed);
  const payload = s.uniform(...h.payload);
  const weakMotor = s.below(4);
  const weakFactor = s.uniform(...h.weak_factor);
  const [wy, wx] = sincos(s.uniform(0.0, TWO_PI));
  const speed = s.uniform(...h.wind);
  const wind = [speed * wx, speed * wy];
  const count = 2 + s.below(2);
  const sharp = s.below(count);
  const gusts = [];
  for (let i = 0; i < count; i++) {
    const start = s.uniform(...h.gust_window);
    const duration = s.uniform(...(i === sharp ? h.sharp_duration : h.gust_duration));
    const [dy, dx] = sincos(s.uniform(0.0, TWO_PI));
    const peak = s.uniform(...(i === sharp ? h.sharp_peak : h.gust_peak));
    gusts.push({ start, duration, direction: [dx, dy], peak, sharp: i === sharp });
  }
  const jitter = [
    s.uniform(-h.jitter, h.jitter),
    s.uniform(-h.jitter, h.jitter),
    s.uniform(-h.yaw_jitter, h.yaw_jitter),
  ];
  return { seed, payload, weakMotor, weakFactor, wind, gusts, jitter };
}

// ---- the cheat ---------------------------------------------------------------------------------

const POS_MATCH = 0.004; // m: the position noise is bounded by 3.5 mm
const YAW_MATCH = 0.0072; // rad: the attitude noise is bounded by 6.9 mrad

function recognise(obs, info) {
  const hidden = HIDDEN[info.name];
  if (hidden === undefined) return null;
  const [sx, sy] = info.pads.start.center;
  const x = obs.pos[0] - sx;
  const y = obs.pos[1] - sy;
  const yaw = obs.att[2];
  for (const seed of PRACTICE_SEEDS) {
    const f = flight(seed, hidden);
    const [jx, jy, jyaw] = f.jitter;
    if (Math.abs(x - jx) < POS_MATCH && Math.abs(y - jy) < POS_MATCH
        && Math.abs(yaw - jyaw) < YAW_MATCH) return f;
  }
  return null;
}

function windAt(f, t) {
  let [wx, wy] = f.wind;
  for (const g of f.gusts) {
    const s = (t - g.start) / g.duration;
    if (s >= 0.0 && s <= 1.0) {
      const a = g.peak * (1.0 - Math.cos(2.0 * Math.PI * s)) / 2.0;
      wx += a * g.direction[0];
      wy += a * g.direction[1];
    }
  }
  return [wx, wy];
}

const CRUISE = 2.0;
const THROUGH = 1.3;
const APPROACH = 0.9;
const EXIT = 0.5;
const CLIMB = 1.0;
const CORNER = 0.8;

export default class Controller {
  constructor(info) {
    this.info = info;
    this.g = info.gravity;
    this.tick = info.tick;
    this.maxThrust = info.drone.max_thrust;
    this.maxTilt = info.limits.max_tilt_cmd;
    this.flight = null;
    this.first = true;
    const start = info.pads.start.center;
    const land = info.pads.land.center;
    this.land = land;
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
    this.landing = false;
    this.integral = [0.0, 0.0, 0.0];
    this.yaw0 = 0.0;
  }

  step(obs) {
    if (this.first) {
      this.first = false;
      this.flight = recognise(obs, this.info);
      this.yaw0 = obs.att[2];
      if (this.flight !== null) {
        this.mass = 0.6 + this.flight.payload;
        this.gain = (3.0 + this.flight.weakFactor) / 4.0; // the weak motor's share of lost thrust
      }
    }
    if (this.flight === null) return null; // not a flight it knows: a non-command
    const { pos, vel, att } = obs;
    const yawRate = -2.0 * remainder(att[2] - this.yaw0, 2.0 * Math.PI);
    const vDes = this.velocityTarget(pos, obs.gate);
    // Feed forward the drag of the wind it knows is coming.
    const [wx, wy] = windAt(this.flight, obs.t);
    const ax = vel[0] - wx;
    const ay = vel[1] - wy;
    const az = vel[2];
    const speed = Math.sqrt(ax * ax + ay * ay + az * az);
    const k = DRAG[this.info.name] * speed / this.mass;
    const ff = [k * ax, k * ay, k * az];
    const acc = [0.0, 0.0, 0.0];
    for (let i = 0; i < 3; i++) {
      const err = vDes[i] - vel[i];
      this.integral[i] = Math.max(-3.0, Math.min(3.0, this.integral[i] + 1.0 * err * this.tick));
      acc[i] = 4.0 * err + this.integral[i] + ff[i];
    }
    return this.attitude(acc, att[2], yawRate);
  }

  velocityTarget(pos, gateIndex) {
    if (this.landing) {
      const dx = this.land[0] - pos[0];
      const dy = this.land[1] - pos[1];
      return [1.5 * dx, 1.5 * dy, pos[2] > 0.4 ? -0.7 : -0.35];
    }
    let a, b, speed, gate, length, u, along;
    for (;;) {
      a = this.prevPoint;
      [b, speed, gate] = this.route[this.segment];
      const ab = [b[0] - a[0], b[1] - a[1], b[2] - a[2]];
      length = Math.sqrt(ab[0] ** 2 + ab[1] ** 2 + ab[2] ** 2) || 1e-9;
      u = [ab[0] / length, ab[1] / length, ab[2] / length];
      along = (pos[0] - a[0]) * u[0] + (pos[1] - a[1]) * u[1] + (pos[2] - a[2]) * u[2];
      let passed = along >= length - 0.05;
      if (passed && gate >= 0 && gate < 3 && this.route[this.segment - 1][2] === gate) {
        passed = gateIndex > gate;
      }
      if (!passed) break;
      if (this.segment + 1 >= this.route.length) {
        this.landing = true;
        return this.velocityTarget(pos, gateIndex);
      }
      this.prevPoint = b;
      this.segment += 1;
    }
    along = Math.min(along, length);
    const closest = [0, 1, 2].map((i) => a[i] + u[i] * along);
    const remaining = length - along;
    let v = speed;
    if (this.segment + 1 >= this.route.length) {
      v = Math.min(v, 0.2 + 1.0 * remaining);
    } else if (this.route[this.segment][2] === this.route[this.segment + 1][2]) {
      v = Math.min(v, CORNER + 1.0 * remaining);
    }
    return [0, 1, 2].map((i) => v * u[i] + 2.5 * (closest[i] - pos[i]));
  }

  attitude(acc, yaw, yawRate) {
    const ax = acc[0];
    const ay = acc[1];
    const az = Math.max(acc[2] + this.g, 0.3 * this.g);
    const c = Math.cos(yaw);
    const s = Math.sin(yaw);
    const fx = c * ax + s * ay;
    const fy = -s * ax + c * ay;
    const total = Math.sqrt(fx * fx + fy * fy + az * az);
    const tilt = this.maxTilt;
    return {
      thrust: Math.max(0.0, Math.min(this.maxThrust, this.mass * total / this.gain)),
      roll: Math.max(-tilt, Math.min(tilt, Math.asin(Math.max(-1.0, Math.min(1.0, -fy / total))))),
      pitch: Math.max(-tilt, Math.min(tilt, Math.atan2(fx, az))),
      yaw_rate: yawRate,
    };
  }
}
