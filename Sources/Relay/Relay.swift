// Relay: work in progress
