// RTP: work in progress
