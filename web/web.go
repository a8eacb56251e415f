// Package web serves the dashboard: a TypeScript single-page app built with
// Vite into web/dist (committed, so `go build` needs no npm) and embedded in
// the binary. Paths that are not files get index.html, so the app's own
// routes (permalinks like /p/ID) load it. Built assets have content-hashed
// names and are cached for a year; the build also writes a gzip copy of
// each (NAME.gz), served to clients that accept gzip. It holds no data and
// no logic of the service: the app talks to the Connect API like any
// client. The sources and scripts are under web/ (see web/README.md).
package web

import (
	"embed"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

//go:embed all:dist
var dist embed.FS

// Handler serves the built app.
func Handler() http.Handler {
	root, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err)
	}
	return handler(root)
}

func handler(root fs.FS) http.Handler {
	files := http.FileServerFS(root)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
		if name == "" {
			name = "index.html"
		}
		asset := strings.HasPrefix(name, "assets/")
		if st, err := fs.Stat(root, name); err != nil || st.IsDir() {
			if asset {
				http.NotFound(w, r)
				return
			}
			// An app route: the app decides what to show.
			name = "index.html"
			r = r.Clone(r.Context())
			r.URL.Path = "/"
		}
		h := w.Header()
		if asset {
			h.Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			h.Set("Cache-Control", "no-cache")
		}
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		if asset {
			h.Add("Vary", "Accept-Encoding")
			if acceptsGzip(r) && serveGzip(w, r, root, name) {
				return
			}
		}
		files.ServeHTTP(w, r)
	})
}

// serveGzip serves name.gz as name with Content-Encoding: gzip, if the
// build wrote one.
func serveGzip(w http.ResponseWriter, r *http.Request, root fs.FS, name string) bool {
	f, err := root.Open(name + ".gz")
	if err != nil {
		return false
	}
	defer f.Close()
	st, err := f.Stat()
	rs, ok := f.(io.ReadSeeker)
	if err != nil || !ok {
		return false
	}
	ctype := mime.TypeByExtension(path.Ext(name))
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Encoding", "gzip")
	http.ServeContent(w, r, name, st.ModTime(), rs)
	return true
}

// acceptsGzip says whether the request's Accept-Encoding allows gzip.
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}
