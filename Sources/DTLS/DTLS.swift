// DTLS: work in progress
