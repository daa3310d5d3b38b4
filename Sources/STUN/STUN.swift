// STUN: work in progress
