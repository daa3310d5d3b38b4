// AudioProcessing: work in progress
