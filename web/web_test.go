package web

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
)

func testFS() fstest.MapFS {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte("console.log(1)"))
	zw.Close()
	return fstest.MapFS{
		"index.html":           {Data: []byte("<!doctype html><div id=app></div>")},
		"assets/app-abc.js":    {Data: []byte("console.log(1)")},
		"assets/app-abc.js.gz": {Data: gz.Bytes()},
		"assets/app-abc.css":   {Data: []byte("body{}")},
	}
}

func get(t *testing.T, h http.Handler, path string, hdr ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestAppRoutesGetIndex(t *testing.T) {
	h := handler(testFS())
	for _, p := range []string{"/", "/p/6f0c-1", "/p/6f0c-1?start=2.4&end=2.48", "/some/where", "/assets/"} {
		r := get(t, h, p)
		if r.StatusCode != 200 || !strings.Contains(body(t, r), `id=app`) {
			t.Errorf("%s: status %d, want index.html", p, r.StatusCode)
		}
		if cc := r.Header.Get("Cache-Control"); cc != "no-cache" {
			t.Errorf("%s: Cache-Control %q", p, cc)
		}
	}
}

func TestAssets(t *testing.T) {
	h := handler(testFS())
	r := get(t, h, "/assets/app-abc.js")
	if r.StatusCode != 200 || body(t, r) != "console.log(1)" || r.Header.Get("Content-Encoding") != "" {
		t.Fatalf("plain asset: %d %v", r.StatusCode, r.Header)
	}
	if !strings.Contains(r.Header.Get("Cache-Control"), "immutable") {
		t.Errorf("asset Cache-Control %q", r.Header.Get("Cache-Control"))
	}
	r = get(t, h, "/assets/app-abc.js", "Accept-Encoding", "gzip, deflate, br")
	if r.Header.Get("Content-Encoding") != "gzip" || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/javascript") {
		t.Fatalf("gzip asset: %v", r.Header)
	}
	zr, err := gzip.NewReader(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(zr); string(b) != "console.log(1)" {
		t.Errorf("gzip body %q", b)
	}
	if r := get(t, h, "/assets/app-abc.js", "Accept-Encoding", "gzip;q=0"); r.Header.Get("Content-Encoding") != "" {
		t.Errorf("gzip;q=0 got gzip")
	}
	// no .gz beside it: served plain
	if r := get(t, h, "/assets/app-abc.css", "Accept-Encoding", "gzip"); r.StatusCode != 200 || r.Header.Get("Content-Encoding") != "" {
		t.Errorf("css: %d %v", r.StatusCode, r.Header)
	}
	if r := get(t, h, "/assets/missing.js"); r.StatusCode != 404 {
		t.Errorf("missing asset: %d, want 404 (not index.html)", r.StatusCode)
	}
}

// The embedded build is an app: index.html loads a hashed script that exists.
func TestEmbeddedBuild(t *testing.T) {
	h := Handler()
	html := body(t, get(t, h, "/p/x"))
	i := strings.Index(html, `src="/assets/`)
	if i < 0 {
		t.Fatalf("index.html loads no script from /assets/: %s", html)
	}
	src := html[i+5:]
	src = src[:strings.IndexByte(src, '"')]
	if r := get(t, h, src, "Accept-Encoding", "gzip"); r.StatusCode != 200 {
		t.Fatalf("%s: %d", src, r.StatusCode)
	}
}
