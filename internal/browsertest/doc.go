// Package browsertest starts a headless Chromium for the console's browser
// tests and drives it with chromedp.
//
// Tests get a fresh browser with its own profile directory; it is stopped
// when the test ends. Without a Chromium on the machine a test is skipped,
// except under CI (CI set in the environment), where it fails: .ci/run
// installs Debian's chromium, so a missing browser there is a broken CI,
// not a reason to stay silent.
package browsertest
