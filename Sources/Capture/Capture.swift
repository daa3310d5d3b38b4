// Capture: work in progress
