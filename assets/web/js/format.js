// Formatting numbers, sizes and times for the pages (the browser's locale; times are Unix
// seconds on the wire).

export function bytes(n) {
  if (n === undefined || n === null) return '—';
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0, v = Number(n);
  while (v >= 1000 && i < units.length - 1) { v /= 1000; i++; }
  return (i === 0 ? v : v.toFixed(v < 10 ? 1 : 0)) + ' ' + units[i];
}

export function num(n) {
  return n === undefined || n === null ? '—' : Number(n).toLocaleString();
}

// toDate takes Unix seconds, milliseconds or an RFC 3339 string.
export function toDate(t) {
  if (t === undefined || t === null || t === '' || t === 0) return null;
  if (typeof t === 'number') return new Date(t < 1e12 ? t * 1000 : t);
  const d = new Date(t);
  return isNaN(d) ? null : d;
}

export function when(t) {
  const d = toDate(t);
  return d ? d.toLocaleString([], {dateStyle: 'medium', timeStyle: 'short'}) : '—';
}

export function clock(t) {
  const d = toDate(t);
  return d ? d.toLocaleTimeString([], {hour: '2-digit', minute: '2-digit', second: '2-digit'}) : '';
}

export function ms(n) {
  if (n === undefined || n === null) return '—';
  return n < 1000 ? n + ' ms' : (n / 1000).toFixed(n < 10000 ? 2 : 1) + ' s';
}

// waitText says how long a Retry-After of secs seconds is, in words.
export function waitText(secs) {
  secs = Math.max(1, Math.ceil(secs));
  if (secs < 60) return secs + (secs === 1 ? ' second' : ' seconds');
  const m = Math.ceil(secs / 60);
  return m + (m === 1 ? ' minute' : ' minutes');
}

// localInput renders a Date for <input type=datetime-local>.
export function localInput(d) {
  const p = n => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}
