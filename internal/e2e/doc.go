// Package e2e holds the end-to-end tests that drive the whole library
// through a real browser: a form on another origin embeds the capture
// snippet, and its certificate is verified, retained as video and revoked.
// It has no code of its own.
//
//	go test ./internal/e2e -v # skipped, saying why, without Chromium or rrweb
//	go test ./internal/e2e -run TestBrowserCapture -v
package e2e
