//go:build !race

package tui

// hostileChats is how many chats of 900 KB TestHostileTranscriptMemory
// sends: enough that the transcript drops the oldest.
const hostileChats = 500
