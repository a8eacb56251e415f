//go:build !linux

package localfs

import "os"

func evict(f *os.File) {}
