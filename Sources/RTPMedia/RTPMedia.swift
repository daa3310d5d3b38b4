// RTPMedia: work in progress
