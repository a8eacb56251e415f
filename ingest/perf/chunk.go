package perf

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
)

// Chunking: the input is cut into pieces of about chunkSize bytes at blank
// lines. The Perl script forgets everything but the event filter at a blank
// line, so each piece can be parsed on its own core and the results merged in
// order. Memory stays bounded by the pieces in flight, whatever the input size.

const (
	chunkSize = 1 << 20
	// maxChunk bounds a stretch without a blank line. perf script output with
	// call graphs has one after every sample; past this we cut before a line
	// that starts a sample instead, and past that the input is rejected.
	maxChunk = 32 << 20
)

type chunk struct {
	seq       int
	data      []byte
	firstLine int  // line number of data's first line, from 1
	clean     bool // starts after a blank line (or at the start of input)
	last      bool // no input follows
	filter    string
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 2*chunkSize); return &b }}

// readChunks cuts r into chunks and sends them on out until input ends, an
// error occurs, or stop is closed.
func readChunks(r io.Reader, out chan<- *chunk, stop <-chan struct{}) error {
	defer close(out)
	var carry []byte
	line, seq, clean, eof := 1, 0, true, false
	for !eof || len(carry) > 0 {
		buf := append((*bufPool.Get().(*[]byte))[:0], carry...)
		cut := -1
		for want := chunkSize; cut < 0; want = len(buf) + chunkSize {
			if !eof && len(buf) < want {
				if err := readMore(r, &buf, want); err == io.EOF {
					eof = true
				} else if err != nil {
					return err
				}
			}
			switch {
			case eof:
				cut = len(buf)
			case bytes.LastIndex(buf, []byte("\n\n")) >= 0:
				cut = bytes.LastIndex(buf, []byte("\n\n")) + 2
			case len(buf) >= maxChunk:
				if cut = lastSampleStart(buf); cut < 0 {
					return fmt.Errorf("line %d: no line break within %d MiB: not perf script text",
						line+bytes.Count(buf, []byte("\n")), maxChunk>>20)
				}
			}
		}
		carry = append(carry[:0], buf[cut:]...)
		c := &chunk{seq: seq, data: buf[:cut], firstLine: line, clean: clean, last: eof && len(carry) == 0}
		clean = cut >= 2 && buf[cut-1] == '\n' && buf[cut-2] == '\n'
		line += bytes.Count(c.data, []byte("\n"))
		seq++
		select {
		case out <- c:
		case <-stop:
			return nil
		}
	}
	return nil
}

// readMore appends to *buf until it holds at least want bytes or input ends.
func readMore(r io.Reader, buf *[]byte, want int) error {
	b := *buf
	if cap(b) < want {
		nb := make([]byte, len(b), want+want/4)
		copy(nb, b)
		b = nb
	}
	defer func() { *buf = b }()
	for len(b) < want {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			return err
		}
	}
	return nil
}

// lastSampleStart finds the last line start that begins with neither
// whitespace nor '#', so it can only be a sample header (or garbage).
func lastSampleStart(b []byte) int {
	for i := len(b) - 1; i > 0; i-- {
		if b[i-1] == '\n' && i < len(b) && !isSpace(b[i]) && b[i] != '#' {
			return i
		}
	}
	return -1
}

func recycle(c *chunk) {
	b := c.data[:0]
	bufPool.Put(&b)
}

// cpu, when set, holds one token per chunk being parsed anywhere in the
// process: it bounds the cores all concurrent parses take together.
var cpu chan struct{}

// LimitCPU bounds the chunks parsed at once by every parse in the process
// to n (n <= 0: no bound). A server calls it once at start so that uploads
// leave cores to queries; it must not be called while parses run.
func LimitCPU(n int) {
	if n <= 0 {
		cpu = nil
		return
	}
	cpu = make(chan struct{}, n)
}

// errStop ends a pipeline early without being an error.
var errStop = errors.New("stop")

// pipeline runs work on every chunk on all cores and hands the results to
// merge in input order. prepare, if set, sees each chunk in order before it
// is dispatched (for state that must flow sequentially, like the first event).
// merge returning errStop ends the run quietly.
func pipeline[R any](r io.Reader, prepare func(*chunk), work func(worker int, c *chunk) R, merge func(*chunk, R) error) error {
	workers := runtime.GOMAXPROCS(0)
	if cpu != nil {
		workers = min(workers, cap(cpu))
	}
	tokens := cpu
	chunks := make(chan *chunk, workers)
	stop := make(chan struct{})
	var stopOnce sync.Once
	halt := func() { stopOnce.Do(func() { close(stop) }) }
	defer halt()

	type job struct {
		c   *chunk
		res chan R
	}
	jobs := make(chan job, workers)
	order := make(chan job, 2*workers)

	readErr := make(chan error, 1)
	go func() { readErr <- readChunks(r, chunks, stop) }()
	go func() {
		defer close(jobs)
		defer close(order)
		for c := range chunks {
			if prepare != nil {
				prepare(c)
			}
			j := job{c: c, res: make(chan R, 1)}
			select { // to a worker first: a job the merger waits for must be running
			case jobs <- j:
			case <-stop:
				return
			}
			select {
			case order <- j:
			case <-stop:
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				if tokens != nil {
					tokens <- struct{}{}
				}
				res := work(w, j.c)
				if tokens != nil {
					<-tokens
				}
				j.res <- res
			}
		}()
	}
	var mergeErr error
	for j := range order {
		res := <-j.res
		if mergeErr == nil {
			mergeErr = merge(j.c, res)
			if mergeErr != nil {
				halt()
			}
		}
		recycle(j.c)
	}
	halt()
	wg.Wait()
	for range chunks { // let the reader finish if it is blocked
	}
	if err := <-readErr; err != nil && mergeErr == nil {
		return err
	}
	if mergeErr == errStop {
		return nil
	}
	return mergeErr
}
