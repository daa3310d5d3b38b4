// Codecs: work in progress
