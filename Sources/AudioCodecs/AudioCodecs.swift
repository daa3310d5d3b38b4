// AudioCodecs: work in progress
