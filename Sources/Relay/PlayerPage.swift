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
let pc = null, resource = null;
const log = m => document.getElementById('log').textContent += m + '\\n';
// A simulcast layer asked of the page (/players/?layer=low) goes on to the relay.
const layer = new URLSearchParams(location.search).get('layer');
const q = () => '?app=' + encodeURIComponent(app.value) + '&stream=' + encodeURIComponent(stream.value)
  + (layer ? '&layer=' + encodeURIComponent(layer) : '');
async function negotiate(kind) {
  await pc.setLocalDescription(await pc.createOffer());
  await new Promise(r => { if (pc.iceGatheringState === 'complete') r(); else pc.onicegatheringstatechange = () => pc.iceGatheringState === 'complete' && r(); setTimeout(r, 2000); });
  const res = await fetch('/rtc/v1/' + kind + '/' + q(), {method: 'POST', headers: {'Content-Type': 'application/sdp'}, body: pc.localDescription.sdp});
  if (res.status !== 201) throw new Error(kind + ' answered ' + res.status + ': ' + await res.text());
  resource = res.headers.get('Location');
  await pc.setRemoteDescription({type: 'answer', sdp: await res.text()});
  pc.onconnectionstatechange = () => log('connection ' + pc.connectionState);
}
document.getElementById('publish').onclick = async () => {
  pc = new RTCPeerConnection();
  const media = await navigator.mediaDevices.getUserMedia({audio: true, video: {width: 1280, height: 720}});
  video.srcObject = media;
  for (const t of media.getTracks()) pc.addTransceiver(t, {direction: 'sendonly'});
  try { await negotiate('whip'); log('publishing'); } catch (e) { log(e); }
};
document.getElementById('play').onclick = async () => {
  pc = new RTCPeerConnection();
  pc.addTransceiver('audio', {direction: 'recvonly'});
  pc.addTransceiver('video', {direction: 'recvonly'});
  pc.ontrack = e => { video.srcObject = e.streams[0] || new MediaStream([e.track]); };
  try { await negotiate('whep'); log('playing'); } catch (e) { log(e); }
};
document.getElementById('stop').onclick = async () => {
  if (resource) await fetch(resource, {method: 'DELETE'});
  if (pc) pc.close();
  pc = null; resource = null; log('stopped');
};
</script></body></html>
"""
