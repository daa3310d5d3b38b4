/// The built-in page at `/players/`: publish the browser's camera with WHIP or play a stream
/// with WHEP, against this server.
let playerPage = """
<!doctype html>
<html><head><meta charset="utf-8"><title>SwiftRTC relay</title>
<style>body{font:14px sans-serif;margin:2em;background:#111;color:#eee}video{width:640px;height:360px;background:#000}
input{width:8em}button{margin:0 .5em}#log{white-space:pre;font:12px monospace;color:#9c9}</style></head>
<body>
<h1>SwiftRTC relay</h1>
<p>app <input id="app" value="live"> stream <input id="stream" value="livestream">
<button id="publish">Publish camera (WHIP)</button><button id="play">Play (WHEP)</button><button id="stop">Stop</button></p>
<video id="video" autoplay playsinline muted controls></video>
<div id="log"></div>
<script>
let pc = null, resource = null, media = null, kind = null;
const log = m => document.getElementById('log').textContent += m + '\\n';
// A simulcast layer or temporal layers asked of the page (/players/?layer=low&temporal=0) go on to the relay.
const asked = new URLSearchParams(location.search);
const q = () => '?app=' + encodeURIComponent(app.value) + '&stream=' + encodeURIComponent(stream.value)
  + ['layer', 'temporal'].filter(k => asked.get(k)).map(k => '&' + k + '=' + encodeURIComponent(asked.get(k))).join('');
const gathered = () => new Promise(r => { if (pc.iceGatheringState === 'complete') r(); else pc.onicegatheringstatechange = () => pc.iceGatheringState === 'complete' && r(); setTimeout(r, 2000); });
async function negotiate(k) {
  await pc.setLocalDescription(await pc.createOffer());
  await gathered();
  const res = await fetch('/rtc/v1/' + k + '/' + q(), {method: 'POST', headers: {'Content-Type': 'application/sdp'}, body: pc.localDescription.sdp});
  if (res.status !== 201) throw Object.assign(new Error(k + ' answered ' + res.status + ': ' + await res.text()), {status: res.status});
  resource = res.headers.get('Location');
  await pc.setRemoteDescription({type: 'answer', sdp: await res.text()});
  const mine = pc;
  pc.onconnectionstatechange = () => log('connection ' + mine.connectionState);
}
// k: 'whip' (the camera) or 'whep' (the stream), on a new RTCPeerConnection.
async function start(k) {
  kind = k;
  pc = new RTCPeerConnection();
  if (k === 'whip') {
    if (!media || media.getTracks().some(t => t.readyState === 'ended')) {
      media = await navigator.mediaDevices.getUserMedia({audio: true, video: {width: 1280, height: 720}});
    }
    video.srcObject = media;
    for (const t of media.getTracks()) pc.addTransceiver(t, {direction: 'sendonly'});
  } else {
    pc.addTransceiver('audio', {direction: 'recvonly'});
    pc.addTransceiver('video', {direction: 'recvonly'});
    pc.ontrack = e => { video.srcObject = e.streams[0] || new MediaStream([e.track]); };
  }
  await negotiate(k);
  log(k === 'whip' ? 'publishing' : 'playing');
}
// ICE restart of this session (RFC 9725 section 4.3): new credentials PATCHed, the server's applied.
async function iceRestart() {
  pc.restartIce();
  await pc.setLocalDescription(await pc.createOffer());
  const lines = pc.localDescription.sdp.split(/\\r?\\n/);
  const value = n => (lines.find(l => l.startsWith('a=' + n + ':')) || '').slice(n.length + 3);
  const first = lines.findIndex(l => l.startsWith('m='));
  const mid = (lines.slice(first).find(l => l.startsWith('a=mid:')) || 'a=mid:0').slice(6);
  const body = ['a=ice-ufrag:' + value('ice-ufrag'), 'a=ice-pwd:' + value('ice-pwd'), lines[first], 'a=mid:' + mid].join('\\r\\n') + '\\r\\n';
  const r = await fetch(resource, {method: 'PATCH', headers: {'Content-Type': 'application/trickle-ice-sdpfrag', 'If-Match': '*'}, body});
  const text = await r.text();
  if (r.status !== 200) throw new Error('ICE restart answered ' + r.status + ': ' + text.trim());
  const f = text.split(/\\r?\\n/);
  const pick = n => (f.find(l => l.startsWith('a=' + n + ':')) || '').slice(n.length + 3);
  const out = [];
  let firstMid = true;
  for (const l of pc.currentRemoteDescription.sdp.split(/\\r?\\n/)) {
    if (l.startsWith('a=candidate:') || l === 'a=end-of-candidates' || l === '') continue;
    if (l.startsWith('a=ice-ufrag:')) { out.push('a=ice-ufrag:' + pick('ice-ufrag')); continue; }
    if (l.startsWith('a=ice-pwd:')) { out.push('a=ice-pwd:' + pick('ice-pwd')); continue; }
    out.push(l);
    if (l.startsWith('a=mid:') && firstMid) {
      firstMid = false;
      out.push(...f.filter(x => x.startsWith('a=candidate:')));
      if (f.includes('a=end-of-candidates')) out.push('a=end-of-candidates');
    }
  }
  await pc.setRemoteDescription({type: 'answer', sdp: out.join('\\r\\n') + '\\r\\n'});
}
async function end() {
  const old = pc, where = resource;
  pc = null; resource = null;
  if (where) try { await fetch(where, {method: 'DELETE'}); } catch (e) {}
  if (old) old.close();
}
// Recovery, as swiftrtc's own clients do it (Chromium does not reconnect by itself): a failed
// connection first tries an ICE restart, which keeps the session; when the server no longer has
// it (it expired past consent, or the server restarted) or that fails too, a new session takes its
// place. An attempt that errs or has not connected in 10 s counts as failed; attempts are 1 s, then 2 s, apart
// until one connects. Stop, or the server refusing the session (401/403), ends them.
// window.recovery keeps what was tried.
const recovery = window.recovery = {attempts: [], streak: 0, last: 0, busy: false, errored: false};
setInterval(async () => {
  if (!pc || !kind || recovery.busy) return;
  const state = pc.connectionState, now = performance.now();
  if (state === 'connected') { recovery.streak = 0; return; }
  const stuck = recovery.streak > 0 && (recovery.errored || now - recovery.last > 10000);
  if (state !== 'failed' && !stuck) return;
  if (recovery.streak > 0 && now - recovery.last < (recovery.streak === 1 ? 1000 : 2000)) return;
  recovery.busy = true;
  recovery.errored = false;
  recovery.streak += 1;
  recovery.last = now;
  const attempt = {at: now, state, how: recovery.streak === 1 && resource ? 'ice restart' : 'new session'};
  recovery.attempts.push(attempt);
  log('connection ' + state + ': ' + attempt.how);
  const k = kind;
  try {
    if (attempt.how === 'ice restart') {
      try { await iceRestart(); } catch (e) { log(e); attempt.how = 'new session'; }
    }
    if (attempt.how === 'new session') { await end(); await start(k); }
  } catch (e) {
    log(e);
    attempt.error = String(e);
    recovery.errored = true;
    // Refused, not unreachable: trying again would be refused again.
    if (e.status === 401 || e.status === 403) { kind = null; log('recovery stopped'); }
  }
  recovery.busy = false;
}, 250);
document.getElementById('publish').onclick = async () => { try { await start('whip'); } catch (e) { log(e); } };
document.getElementById('play').onclick = async () => { try { await start('whep'); } catch (e) { log(e); } };
document.getElementById('stop').onclick = async () => { kind = null; await end(); log('stopped'); };
</script></body></html>
"""
