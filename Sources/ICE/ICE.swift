// ICE: work in progress
