// PeerConnection: work in progress
