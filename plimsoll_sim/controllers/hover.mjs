// The floor in JavaScript (the twin of hover.py): take off, hover one metre over the start pad,
// never try a gate.

export default class Controller {
  constructor(info) {
    this.g = info.gravity;
    this.tick = info.tick;
    this.mass = info.drone.mass;
    this.target = [info.pads.start.center[0], info.pads.start.center[1], 1.0];
    this.integral = [0.0, 0.0, 0.0];
  }

  step(obs) {
    const { pos, vel } = obs;
    const yaw = obs.att[2];
    const acc = [];
    for (let i = 0; i < 3; i++) {
      const err = 1.2 * (this.target[i] - pos[i]) - vel[i];
      this.integral[i] = Math.max(-6.0, Math.min(6.0, this.integral[i] + 2.0 * err * this.tick));
      acc.push(3.0 * err + this.integral[i]);
    }
    const ax = acc[0];
    const ay = acc[1];
    const az = Math.max(acc[2] + this.g, 2.0);
    const c = Math.cos(yaw);
    const s = Math.sin(yaw);
    const fx = c * ax + s * ay;
    const fy = -s * ax + c * ay;
    const total = Math.sqrt(fx * fx + fy * fy + az * az);
    return {
      thrust: this.mass * total,
      roll: Math.max(-0.5, Math.min(0.5, Math.asin(-fy / total))),
      pitch: Math.max(-0.5, Math.min(0.5, Math.atan2(fx, az))),
      yaw_rate: -yaw,
    };
  }
}
