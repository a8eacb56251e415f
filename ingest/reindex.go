package ingest

import (
	"context"
	"io"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/index"
)

// Reindex parses a stored profile's raw file again and returns its index:
// the rows an upload of it wrote, for a profile whose rows the sample tier
// moved out of the index (the sweeper checks, before it moves a profile,
// that this gives back exactly its stored rows). The file is read in the
// format the upload was stored as, with the server's bound on its
// decompressed size. A missing or unparsable file is EINTERNAL (the
// profile's samples cannot be given back), a blob store failure
// EUNAVAILABLE.
func (s *Service) Reindex(ctx context.Context, p *fleetscope.ProfileInfo) (*index.Index, error) {
	r, err := s.Blobs.Get(ctx, p.BlobKey)
	if fleetscope.ErrorCode(err) == fleetscope.ENOTFOUND {
		return nil, fleetscope.Wrap(err, fleetscope.EINTERNAL, "profile "+p.ID+": its raw file is missing")
	}
	if err != nil {
		return nil, fleetscope.Wrap(err, fleetscope.EUNAVAILABLE, "profile "+p.ID+": could not read its raw file (blob store unavailable), retry later")
	}
	defer r.Close()
	format := p.Format
	if _, err := Lookup(format); err != nil {
		format = "" // a name a parser gave itself: detect it, as the upload did
	}
	br := &blobReader{ctx: ctx, r: r}
	parsed, err := ParseIndex(br, format, s.MaxRawBytes, Shape{})
	switch {
	case err == nil:
		return parsed.Index, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case br.err != nil: // the blob store's stream, not the file
		return nil, fleetscope.Wrap(br.err, fleetscope.EUNAVAILABLE, "profile "+p.ID+": could not read its raw file (blob store unavailable), retry later")
	}
	return nil, fleetscope.Wrap(err, fleetscope.EINTERNAL, "profile "+p.ID+": its raw file no longer parses")
}

// blobReader stops a parse when its context ends, and keeps the blob
// stream's own failure apart from what the parser makes of the bytes.
type blobReader struct {
	ctx context.Context
	r   io.Reader
	err error
}

func (b *blobReader) Read(p []byte) (int, error) {
	if err := b.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		b.err = err
	}
	return n, err
}
