// SRTP: work in progress
