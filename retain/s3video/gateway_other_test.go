//go:build !linux

package s3video_test

import "os/exec"

func dieWithTest(*exec.Cmd) {}
