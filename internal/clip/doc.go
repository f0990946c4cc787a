// Package clip shortens strings to a number of bytes without splitting a
// UTF-8 character: for close reasons, status lines and previews, whose
// length a protocol or a screen bounds.
package clip
