// Package e2e holds the end-to-end tests that drive the whole library
// through a real browser: a form on another origin embeds the capture
// snippet, and its certificate is verified, retained as video and revoked.
// It has no code of its own.
package e2e
