// Draw a flight from above: gates as short segments, the track as a polyline.
export function draw(ctx, flight, scale = 100) {
  ctx.clearRect(0, 0, 600, 600);
  ctx.beginPath();
  for (const [i, p] of flight.track.entries()) {
    const x = p.x * scale, y = p.y * scale;
    if (i === 0) ctx.moveTo(x, y); else ctx.lineTo(x, y);
  }
  ctx.stroke();
}
