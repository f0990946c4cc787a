//go:build race

package tui

// hostileChats is how many chats of 900 KB TestHostileTranscriptMemory
// sends: under the race detector 500 take 50 s, and 160 still hold the
// whole of each alive were its folded text a prefix (144 MB).
const hostileChats = 160
