// Package travelmcp is the MCP server of the travel-desk example: flight
// search, weather forecasts and bookings, on made-up but deterministic
// data (the same question always gets the same answer), so that the
// example and its tests run anywhere without an account anywhere. The
// command travel-mcp serves it over standard input and output.
package travelmcp

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// EnvCallLog names a file to which each tool call is appended as a JSON
// line {"tool": ..., "arguments": ...}, when set: an audit trail of what
// the server was asked to do.
const EnvCallLog = "TRAVELMCP_CALL_LOG"

// Name and Version are the server's serverInfo.
const (
	Name    = "travel-mcp"
	Version = "1.0.0"
)

// SearchIn are the arguments of search_flights.
type SearchIn struct {
	Origin      string `json:"origin" jsonschema:"departure city"`
	Destination string `json:"destination" jsonschema:"arrival city"`
	Date        string `json:"date" jsonschema:"departure date, YYYY-MM-DD"`
}

// WeatherIn are the arguments of weather_forecast.
type WeatherIn struct {
	City string `json:"city" jsonschema:"the city"`
	Date string `json:"date" jsonschema:"the day, YYYY-MM-DD"`
}

// BookIn are the arguments of book_flight.
type BookIn struct {
	Flight    string `json:"flight" jsonschema:"flight number, as search_flights gives it"`
	Date      string `json:"date" jsonschema:"departure date, YYYY-MM-DD"`
	Passenger string `json:"passenger" jsonschema:"the passenger's full name"`
}

// New returns the server with its tools: search_flights and
// weather_forecast only read; book_flight books (and so should need
// approval).
func New() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: Name, Version: Version}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "search_flights", Description: "Search the flights from one city to another on a day."},
		func(_ context.Context, _ *mcp.CallToolRequest, in SearchIn) (*mcp.CallToolResult, any, error) {
			record("search_flights", in)
			text, err := searchFlights(in)
			if err != nil {
				return nil, nil, err
			}
			return textResult(text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "weather_forecast", Description: "The weather forecast for a city on a day."},
		func(_ context.Context, _ *mcp.CallToolRequest, in WeatherIn) (*mcp.CallToolResult, any, error) {
			record("weather_forecast", in)
			if err := checkDate(in.Date); err != nil {
				return nil, nil, err
			}
			h := hash(strings.ToLower(in.City), in.Date)
			skies := []string{"sunny", "partly cloudy", "overcast", "light rain", "showers", "windy and clear"}
			low := 2 + int(h%14)
			return textResult(fmt.Sprintf("%s on %s: %s, %d to %d °C.", in.City, in.Date, skies[h%6], low, low+3+int(h/16%9))), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "book_flight", Description: "Book a seat on a flight for a passenger. This buys a ticket."},
		func(_ context.Context, _ *mcp.CallToolRequest, in BookIn) (*mcp.CallToolResult, any, error) {
			record("book_flight", in)
			if in.Flight == "" || in.Passenger == "" {
				return nil, nil, fmt.Errorf("flight and passenger are required")
			}
			code := strings.ToUpper(fmt.Sprintf("%06x", hash(in.Flight, in.Date, in.Passenger)%0xffffff))
			return textResult(fmt.Sprintf("Booked %s on %s for %s: confirmation %s.", in.Flight, in.Date, in.Passenger, code)), nil, nil
		})
	return s
}

// Main serves the server over standard input and output and returns the
// exit status.
func Main() int {
	if err := New().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "travel-mcp:", err)
		return 1
	}
	return 0
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func checkDate(d string) error {
	if _, err := time.Parse(time.DateOnly, d); err != nil {
		return fmt.Errorf("date %q: want YYYY-MM-DD", d)
	}
	return nil
}

// searchFlights makes up three flights for a route and a day.
func searchFlights(in SearchIn) (string, error) {
	if err := checkDate(in.Date); err != nil {
		return "", err
	}
	if strings.TrimSpace(in.Origin) == "" || strings.TrimSpace(in.Destination) == "" {
		return "", fmt.Errorf("origin and destination are required")
	}
	if strings.EqualFold(in.Origin, in.Destination) {
		return fmt.Sprintf("No flights: %s is both the origin and the destination.", in.Origin), nil
	}
	airlines := []string{"MW", "TP", "AF", "LH", "IB", "KL"}
	var b strings.Builder
	fmt.Fprintf(&b, "Flights from %s to %s on %s:\n", in.Origin, in.Destination, in.Date)
	for i := range 3 {
		h := hash(strings.ToLower(in.Origin), strings.ToLower(in.Destination), in.Date, fmt.Sprint(i))
		dep := 6*60 + int(h%(15*60))
		dur := 70 + int(h/7%240)
		arr := dep + dur
		fmt.Fprintf(&b, "- %s %d: departs %02d:%02d, arrives %02d:%02d%s, %d EUR\n",
			airlines[h%uint32(len(airlines))], 100+h%900, dep/60, dep%60, arr/60%24, arr%60, nextDay(arr), 60+h%340)
	}
	return b.String(), nil
}

func nextDay(minutes int) string {
	if minutes >= 24*60 {
		return " (+1 day)"
	}
	return ""
}

func hash(parts ...string) uint32 {
	h := fnv.New32a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return h.Sum32()
}

var logMu sync.Mutex

// record appends a call to the file EnvCallLog names.
func record(tool string, args any) {
	path := os.Getenv(EnvCallLog)
	if path == "" {
		return
	}
	line, err := json.Marshal(map[string]any{"tool": tool, "arguments": args})
	if err != nil {
		return
	}
	logMu.Lock()
	defer logMu.Unlock()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "travel-mcp: call log:", err)
		return
	}
	defer f.Close()
	_, _ = f.Write(append(line, '\n'))
}
