// HTTP: work in progress
