/// The browser call page at `/call/?room=NAME` on the signaling server (and `swiftrtc serve`):
/// the reference app's P2P layout — the remote video full size, our preview small in a corner —
/// with Connect / Hang up, a chat box on the data channel "chat", and the connection state. It
/// speaks the room protocol at /rtc/v1/signal/ and interoperates with `swiftrtc p2p`. On a server
/// with access control, open it as `/call/#room=NAME&token=T[&key=KEY]` (the fragment never
/// reaches a server or a log): the token goes out as a WebSocket subprotocol, and without a key
/// the page makes one and shows the invitation link that carries it.
/// The room connection survives a drop as `swiftrtc p2p`'s does: the page joins with `seat=new` and,
/// when its WebSocket dies, takes the seat back with its token (0.25 s doubling to 2 s, jittered
/// down, for 14 s); what it sends meanwhile follows. A seat the server no longer holds ends the call.
/// `?ice=stun:HOST:PORT` (repeatable) adds ICE servers; Restart ICE re-offers with new
/// credentials (`window.restartIce()`), and the page does so itself when the connection has not
/// been connected for 3 s (again after 2 s, doubling to 8 s), as `swiftrtc p2p` does; crossing
/// offers are settled as perfect negotiation (the side that answered the first offer is polite). Tests read `window.pc`, `window.chat`, `window.chatLog`
/// and `window.log`; `window.timing` has `offerAt` (peer joined, offer started) and
/// `firstFrameAt` (the peer's first video frame on screen), performance.now() ms.
public let callPage = """
<!doctype html>
<html><head><meta charset="utf-8"><title>SwiftRTC call</title>
<style>
body{margin:0;background:#111;color:#eee;font:14px sans-serif}
#stage{position:relative;width:100vw;height:70vh;background:#000}
#video{width:100%;height:100%;object-fit:contain;background:#000}
#local{position:absolute;right:12px;bottom:12px;width:22%;max-width:320px;border:2px solid #444;background:#222}
#bar{padding:8px}#bar input{width:10em}button{margin:0 .4em}
#state{color:#9cf}#chatlog{height:8em;overflow:auto;white-space:pre;font:12px monospace;color:#9c9;margin:4px 8px}
#msg{width:60%}
</style></head>
<body>
<div id="stage"><video id="video" autoplay playsinline></video><video id="local" autoplay playsinline muted></video></div>
<div id="bar">room <input id="room"> <button id="connect">Connect</button><button id="hangup" disabled>Hang up</button><button id="restart" disabled>Restart ICE</button>
state: <span id="state">idle</span> <span id="invite"></span></div>
<div id="chatlog"></div>
<div id="bar2" style="padding:0 8px"><input id="msg" placeholder="message"> <button id="send" disabled>Send</button></div>
<script>
window.log = []; window.chatLog = []; window.pc = null; window.chat = null; window.timing = {};
let ws = null, stream = null, pending = [], ended = false;
let seat = null, outbox = [], rejoin = null;   // rejoin: {until, delay, attempt} while the room connection is down
let negotiated = false, polite = false;   // polite: this side answered the call's first offer
const $ = id => document.getElementById(id);
const note = m => { window.log.push(m); };
const state = s => { $('state').textContent = s; note('state ' + s); };
const params = new URLSearchParams(location.search), fragment = new URLSearchParams(location.hash.slice(1));
const param = k => fragment.get(k) || params.get(k);
$('room').value = param('room') || 'demo';
const b64url = bytes => btoa(String.fromCharCode(...bytes)).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '');
const token = param('token');
let key = param('key');
function invite() {
  // A room on a server with tokens needs a key: the first peer makes one and passes it on.
  if (token && !key) key = b64url(crypto.getRandomValues(new Uint8Array(18)));
  if (!key) return;
  const f = new URLSearchParams({room: $('room').value, key});
  if (token) f.set('token', token);
  history.replaceState(null, '', location.pathname + '#' + f);
  $('invite').textContent = 'invite: ' + location.href;
}
const send = o => {
  const text = JSON.stringify(o);
  if (ws && ws.readyState === 1 && !rejoin) ws.send(text); else if (seat && !ended) outbox.push(text);
};
function chatLine(who, text) { window.chatLog.push(who + ': ' + text); $('chatlog').textContent += who + ': ' + text + '\\n'; }
function useChannel(ch) {
  window.chat = ch;
  ch.onopen = () => { $('send').disabled = false; note('chat open'); };
  ch.onmessage = e => chatLine('peer', typeof e.data === 'string' ? e.data : '<' + e.data.byteLength + ' bytes>');
  ch.onclose = () => { $('send').disabled = true; note('chat closed'); };
  if (ch.readyState === 'open') ch.onopen();
}
async function addCandidate(c) {
  if (!pc.remoteDescription) { pending.push(c); return; }
  try { await pc.addIceCandidate(c); } catch (e) { note('addIceCandidate: ' + e); }
}
async function flush() { const p = pending; pending = []; for (const c of p) await addCandidate(c); }
async function connect() {
  ended = false;
  $('connect').disabled = true; $('hangup').disabled = false; $('restart').disabled = false;
  stream = await navigator.mediaDevices.getUserMedia({video: {width: 640, height: 360}, audio: true});
  $('local').srcObject = stream;
  const iceServers = params.getAll('ice').map(u => ({urls: u}));
  pc = window.pc = new RTCPeerConnection({iceServers});
  stream.getTracks().forEach(t => pc.addTrack(t, stream));
  pc.ontrack = e => { $('video').srcObject = e.streams[0] || new MediaStream([e.track]); };
  $('video').requestVideoFrameCallback(() => { window.timing.firstFrameAt = performance.now(); });
  pc.onicecandidate = e => send(e.candidate ? {type: 'candidate', ...e.candidate.toJSON()} : {type: 'candidate', candidate: ''});
  pc.onconnectionstatechange = () => state(pc.connectionState);
  pc.ondatachannel = e => { if (e.channel.label === 'chat') useChannel(e.channel); };
  invite();
  seat = null; outbox = []; rejoin = null; negotiated = false; polite = false;
  openSignaling();
}
function openSignaling() {
  const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const url = proto + '//' + location.host + '/rtc/v1/signal/?room=' + encodeURIComponent($('room').value)
    + (key ? '&key=' + encodeURIComponent(key) : '') + '&seat=' + encodeURIComponent(seat || 'new');
  const socket = ws = token ? new WebSocket(url, ['swiftrtc.signal', 'swiftrtc.bearer.' + b64url(new TextEncoder().encode(token))])
             : new WebSocket(url);
  socket.onmessage = async ev => {
    const m = JSON.parse(ev.data);
    note('signal ' + m.type);
    try {
      if (m.type === 'joined' && rejoin) {
        if (!m.rejoined) { end('the room was lost while the signaling connection was down'); return; }
        rejoin = null;
        const queued = outbox; outbox = [];
        for (const text of queued) socket.send(text);
        note('signaling rejoined');
      } else if (m.type === 'joined') {
        seat = m.seat || null;
        state(m.peers ? 'waiting for the offer' : 'waiting for the peer');
      } else if (m.type === 'peer-joined') {
        window.timing.offerAt = performance.now();
        useChannel(pc.createDataChannel('chat'));
        await pc.setLocalDescription(await pc.createOffer());
        send({type: 'offer', sdp: pc.localDescription.sdp});
      } else if (m.type === 'offer') {
        // Offers that cross (both sides restarting at once): perfect negotiation, as swiftrtc p2p.
        if (pc.signalingState === 'have-local-offer') {
          if (!polite) { note('crossing offer ignored'); return; }
          await pc.setLocalDescription({type: 'rollback'});
        }
        if (!negotiated) { negotiated = true; polite = true; }
        await pc.setRemoteDescription({type: 'offer', sdp: m.sdp});
        await pc.setLocalDescription(await pc.createAnswer());
        send({type: 'answer', sdp: pc.localDescription.sdp});
        await flush();
      } else if (m.type === 'answer') {
        negotiated = true;
        await pc.setRemoteDescription({type: 'answer', sdp: m.sdp});
        await flush();
      } else if (m.type === 'candidate') {
        const c = m.candidate !== undefined ? m.candidate : m.sdp;
        await addCandidate(c ? {candidate: c, sdpMid: m.sdpMid, sdpMLineIndex: m.sdpMLineIndex} : null);
      } else if (m.type === 'bye' || m.type === 'peer-left') { end(m.type === 'bye' ? 'the peer hung up' : 'the peer left'); }
      else if (m.type === 'error') note('server error: ' + m.error);
    } catch (e) { note('error: ' + e); }
  };
  socket.onclose = e => {
    note('signaling closed' + (e.reason ? ': ' + e.reason : ''));
    if (ended || socket !== ws || !seat) return;
    // A dead room connection (no goodbye from us): take the seat back while the server holds it.
    if (!rejoin) rejoin = {until: performance.now() + 14000, delay: 250, attempt: 0};
    if (performance.now() >= rejoin.until) { end('lost the signaling connection'); return; }
    rejoin.attempt += 1;
    note('signaling reconnecting (attempt ' + rejoin.attempt + ')');
    setTimeout(() => { if (!ended) openSignaling(); }, rejoin.delay * (1 - 0.2 * Math.random()));
    rejoin.delay = Math.min(rejoin.delay * 2, 2000);
  };
}
function end(why) {
  if (ended) return; ended = true;
  state(why);
  if (pc) pc.close();
  if (stream) stream.getTracks().forEach(t => t.stop());
  if (ws) ws.close();
  $('connect').disabled = false; $('hangup').disabled = true; $('send').disabled = true; $('restart').disabled = true;
}
window.restartIce = async () => {
  pc.restartIce();
  await pc.setLocalDescription(await pc.createOffer());
  send({type: 'offer', sdp: pc.localDescription.sdp});
  note('restart offered');
};
// ICE recovery, as swiftrtc p2p's: not connected for 3 s (disconnected, or failed past consent)
// restarts ICE through the room, again 2 s later and then doubling to 8 s until it connects; the
// same connection, so the tracks and the chat stay. window.recovery.restarts: when (performance.now()).
const recovery = window.recovery = {restarts: [], since: null, next: 0, delay: 2000};
setInterval(() => {
  if (!pc || ended || !negotiated) return;
  const s = pc.connectionState, now = performance.now();
  if (s === 'connected') { recovery.since = null; recovery.next = 0; recovery.delay = 2000; return; }
  if (s !== 'disconnected' && s !== 'failed' && recovery.since === null) return;
  if (recovery.since === null) recovery.since = now;
  if (now - recovery.since < 3000 || now < recovery.next || pc.signalingState !== 'stable') return;
  recovery.next = now + recovery.delay;
  recovery.delay = Math.min(recovery.delay * 2, 8000);
  recovery.restarts.push(now);
  window.restartIce().catch(e => note('restart: ' + e));
}, 250);
function hangUp() { send({type: 'bye'}); end('hung up'); }
$('connect').onclick = () => connect().catch(e => note('connect: ' + e));
$('hangup').onclick = hangUp;
$('restart').onclick = () => window.restartIce().catch(e => note('restart: ' + e));
$('send').onclick = () => { const t = $('msg').value; if (window.chat && t) { window.chat.send(t); chatLine('me', t); $('msg').value = ''; } };
</script></body></html>
"""
