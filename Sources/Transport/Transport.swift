// Transport: work in progress
