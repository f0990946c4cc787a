package client

// RunEnded returns a channel that is closed once c's latest run is over:
// it will not connect again by itself. Tests wait on it to show that a
// client did not reconnect, rather than sleeping.
func RunEnded(c *Client) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dispatched
}
