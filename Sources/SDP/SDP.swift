// SDP: work in progress
