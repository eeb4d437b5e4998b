package controlapi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/raven-agent/raven/internal/strictjson"
)

// Wire protocol: one JSON-RPC 2.0 object per line ("\n"-terminated) in each
// direction. Batches (JSON arrays) are not supported. The server sends
// notifications (objects without "id") on the same connection at any time,
// interleaved with responses; responses to concurrent calls may arrive in
// any order and are matched by id.
//
// Authentication: the first call on a connection is
// auth.hello {"token": "rvn_..."}. The connection remembers the token and
// re-verifies it against the credential store on EVERY later call, so a
// revoke or rotate takes effect on the next call of an open connection. A
// connection may say auth.hello again (e.g. after a rotation) to switch
// tokens.

// DefaultMaxFrame caps one inbound frame. A larger frame gets a -32600 error
// and the connection is closed: the stream cannot be trusted to resync.
const DefaultMaxFrame = 1 << 20

const jsonrpcVersion = "2.0"

type request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// Notification is a server→client message without an id.
type Notification struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

type notification struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

var errFrameTooLarge = errors.New("controlapi: frame too large")

// readFrame returns the next line without its newline, refusing lines
// longer than max. The returned slice is only valid until the next call
// when it aliases the reader's buffer.
func readFrame(r *bufio.Reader, max int, scratch *[]byte) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if err == nil {
		if len(line)-1 > max {
			return nil, errFrameTooLarge
		}
		return line[:len(line)-1], nil
	}
	buf := append((*scratch)[:0], line...)
	for errors.Is(err, bufio.ErrBufferFull) {
		if len(buf) > max {
			return nil, errFrameTooLarge
		}
		line, err = r.ReadSlice('\n')
		buf = append(buf, line...)
	}
	*scratch = buf
	if err != nil {
		if errors.Is(err, io.EOF) && len(bytes.TrimSpace(buf)) > 0 {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	if len(buf)-1 > max {
		return nil, errFrameTooLarge
	}
	return buf[:len(buf)-1], nil
}

// parseRequest decodes one frame strictly. On failure it returns the error
// to send and, when the id could be recovered, the id to send it under.
func parseRequest(frame []byte) (request, *RPCError) {
	var req request
	if !json.Valid(frame) {
		return req, Errorf(CodeParseError, "parse error: frame is not valid JSON")
	}
	if frame[0] != '{' {
		return req, Errorf(CodeInvalidRequest, "invalid request: want one JSON-RPC object per line (batches are not supported)")
	}
	if err := strictjson.Decode(frame, &req); err != nil {
		// Recover the id if possible so the client can match the error.
		var loose struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal(frame, &loose)
		req.ID = validID(loose.ID)
		return req, Errorf(CodeInvalidRequest, "invalid request: %v", err)
	}
	if req.ID != nil && validID(req.ID) == nil {
		return request{}, Errorf(CodeInvalidRequest, "invalid request: id must be a string or a number")
	}
	if req.JSONRPC != jsonrpcVersion {
		return req, Errorf(CodeInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`)
	}
	if req.Method == "" || len(req.Method) > 128 {
		return req, Errorf(CodeInvalidRequest, "invalid request: method must be 1..128 bytes")
	}
	if p := bytes.TrimSpace(req.Params); len(p) > 0 && p[0] != '{' && string(p) != "null" {
		return req, Errorf(CodeInvalidParams, "params must be a JSON object")
	}
	return req, nil
}

// validID returns id when it is a JSON string or number short enough to
// echo, else nil.
func validID(id json.RawMessage) json.RawMessage {
	id = bytes.TrimSpace(id)
	if len(id) == 0 || len(id) > 128 {
		return nil
	}
	switch c := id[0]; {
	case c == '"', c == '-', c >= '0' && c <= '9':
		return id
	}
	return nil
}
