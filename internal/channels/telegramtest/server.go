// Package telegramtest is a minimal local Telegram Bot API (getMe,
// long-polled getUpdates, sendMessage, editMessageText) for tests of the Telegram channel.
package telegramtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Token is the bot token the fake accepts.
const Token = "123:abc"

// Sent is one sendMessage (or editMessageText) call the fake received.
type Sent struct {
	ChatID    int64
	Text      string
	ParseMode string
	// Edit marks an editMessageText of message MessageID; a sendMessage's
	// MessageID is the id the fake gave the new message.
	Edit      bool
	MessageID int
}

// Server is the fake Bot API. Point the channel's server URL at URL.
type Server struct {
	URL string

	t   testing.TB
	srv *httptest.Server

	mu            sync.Mutex
	updates       []map[string]any
	nextID        int64
	nextMsgID     int
	parseFailures int
	wake          chan struct{}
	sent          chan Sent
	// closed ends pending long polls before the server closes: httptest's
	// Close waits for handlers, and a poll whose client went away without
	// closing its connection would otherwise wait forever.
	closed chan struct{}
}

// New starts a fake closed at the end of the test.
func New(t testing.TB) *Server {
	s := &Server{t: t, nextID: 1, wake: make(chan struct{}, 1), sent: make(chan Sent, 64), closed: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	t.Cleanup(func() { close(s.closed) }) // runs before srv.Close: cleanups are LIFO
	return s
}

// Push queues an incoming private message from fromID in chatID.
func (s *Server) Push(fromID, chatID int64, text string) {
	s.mu.Lock()
	s.updates = append(s.updates, map[string]any{
		"update_id": s.nextID,
		"message": map[string]any{
			"message_id": s.nextID, "date": 0, "text": text,
			"from": map[string]any{"id": fromID, "is_bot": false, "first_name": "u"},
			"chat": map[string]any{"id": chatID, "type": "private"},
		},
	})
	s.nextID++
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// FailParses makes the next n formatted sends fail the way Telegram does on
// a formatting error.
func (s *Server) FailParses(n int) {
	s.mu.Lock()
	s.parseFailures = n
	s.mu.Unlock()
}

// Next returns the next sendMessage, failing the test after 10s.
func (s *Server) Next(t testing.TB) Sent {
	t.Helper()
	select {
	case m := <-s.sent:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no sendMessage within 10s")
		return Sent{}
	}
}

// NextReply returns the next formatted send or edit, skipping the plain
// partial sends and edits of a streamed reply: the reply as it finally
// reads, whether it was streamed or sent whole.
func (s *Server) NextReply(t testing.TB) Sent {
	t.Helper()
	for {
		if m := s.Next(t); m.ParseMode != "" {
			return m
		}
	}
}

// None fails the test if a sendMessage is waiting.
func (s *Server) None(t testing.TB) {
	t.Helper()
	select {
	case m := <-s.sent:
		t.Fatalf("unexpected sendMessage %+v", m)
	default:
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	method, ok := strings.CutPrefix(r.URL.Path, "/bot"+Token+"/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	if err := r.ParseMultipartForm(1 << 20); err != nil && r.ContentLength > 0 {
		s.t.Errorf("fake bot api: %s: %v", method, err)
	}
	switch method {
	case "getMe":
		reply(w, map[string]any{"id": 123, "is_bot": true, "first_name": "raven"})
	case "getUpdates":
		offset, _ := strconv.ParseInt(r.FormValue("offset"), 10, 64)
		for {
			s.mu.Lock()
			var out []map[string]any
			for _, u := range s.updates {
				if u["update_id"].(int64) >= offset {
					out = append(out, u)
				}
			}
			s.mu.Unlock()
			if len(out) > 0 {
				reply(w, out)
				return
			}
			select {
			case <-s.wake:
			case <-r.Context().Done():
				return
			case <-s.closed:
				reply(w, []map[string]any{})
				return
			}
		}
	case "sendMessage":
		chatID, _ := strconv.ParseInt(r.FormValue("chat_id"), 10, 64)
		m := Sent{ChatID: chatID, Text: r.FormValue("text"), ParseMode: r.FormValue("parse_mode")}
		s.mu.Lock()
		fail := m.ParseMode != "" && s.parseFailures > 0
		if fail {
			s.parseFailures--
		}
		s.mu.Unlock()
		if fail {
			_, _ = fmt.Fprint(w, `{"ok":false,"error_code":400,"description":"Bad Request: can't parse entities: character '!' is reserved"}`)
			return
		}
		s.mu.Lock()
		s.nextMsgID++
		m.MessageID = s.nextMsgID
		s.mu.Unlock()
		s.sent <- m
		reply(w, map[string]any{"message_id": m.MessageID, "date": 0, "chat": map[string]any{"id": chatID, "type": "private"}})
	case "editMessageText":
		chatID, _ := strconv.ParseInt(r.FormValue("chat_id"), 10, 64)
		id, _ := strconv.Atoi(r.FormValue("message_id"))
		s.sent <- Sent{ChatID: chatID, Text: r.FormValue("text"), ParseMode: r.FormValue("parse_mode"), Edit: true, MessageID: id}
		reply(w, map[string]any{"message_id": id, "date": 0, "chat": map[string]any{"id": chatID, "type": "private"}})
	default:
		s.t.Errorf("fake bot api: unexpected method %s", method)
		_, _ = fmt.Fprint(w, `{"ok":false,"error_code":404,"description":"Not Found"}`)
	}
}

func reply(w http.ResponseWriter, result any) {
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": result})
}
