print("swiftrtc")
