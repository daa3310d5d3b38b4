// Render: work in progress
