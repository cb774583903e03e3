// The /api client: JSON in and out, the session's CSRF token on every write, and the one error
// shape ({"error": {"message", "type", "code", "param"}}) turned into an ApiError.

let csrf = '';
const signedOutHandlers = [];

export class ApiError extends Error {
  constructor(status, body, retryAfter) {
    const e = (body && body.error) || {};
    super(e.message || `The server answered ${status}.`);
    this.status = status;
    this.code = e.code || '';
    this.param = e.param || null;
    this.retryAfter = retryAfter;
  }
}

export function setCSRF(token) { csrf = token || ''; }

// onSignedOut registers fn to run when the server says the session is gone.
export function onSignedOut(fn) { signedOutHandlers.push(fn); }

export async function request(method, path, body, opts = {}) {
  try {
    return await send(method, path, body, opts);
  } catch (err) {
    // Another tab signed in again, or the password changed there: this session's token is
    // stale. Ask for the current one and try once more.
    if (err.code !== 'csrf_failed' || opts.retried) throw err;
    const me = await send('GET', '/api/auth/me', undefined, {});
    setCSRF(me.csrf_token);
    return send(method, path, body, {...opts, retried: true});
  }
}

async function send(method, path, body, opts) {
  const headers = {'Accept': opts.accept || 'application/json'};
  let payload;
  if (body instanceof Blob || body instanceof FormData) {
    payload = body;
    if (body instanceof Blob) headers['Content-Type'] = body.type || 'application/octet-stream';
  } else if (body !== undefined) {
    payload = JSON.stringify(body);
    headers['Content-Type'] = 'application/json';
  }
  if (method !== 'GET' && method !== 'HEAD' && csrf) headers['X-CSRF-Token'] = csrf;
  const resp = await fetch(path, {method, headers, body: payload, credentials: 'same-origin', cache: 'no-store'});
  if (opts.raw && resp.ok) return resp;
  if (resp.status === 204) return null;
  const text = await resp.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (!resp.ok) {
    const ra = Number(resp.headers.get('Retry-After'));
    const err = new ApiError(resp.status, data, Number.isFinite(ra) && ra > 0 ? ra : 0);
    if (resp.status === 401 && (err.code === 'not_signed_in' || err.code === 'session_expired') && !opts.quiet) {
      signedOutHandlers.forEach(fn => fn(err));
    }
    throw err;
  }
  return data;
}

export const get = (path, opts) => request('GET', path, undefined, opts);
export const post = (path, body, opts) => request('POST', path, body === undefined ? {} : body, opts);
export const put = (path, body) => request('PUT', path, body);
export const patch = (path, body) => request('PATCH', path, body);
export const del = path => request('DELETE', path);

// list gets a {"object":"list","data":[...]} and returns data.
export async function list(path) {
  const v = await get(path);
  return (v && v.data) || [];
}

// query builds ?a=b&c=d from an object, leaving out empty values.
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, v);
  const s = q.toString();
  return s ? '?' + s : '';
}
