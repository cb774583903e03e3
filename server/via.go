package server

import (
	"github.com/gin-gonic/gin"

	"github.com/superfluid/superfluid/server/forward"
)

// viaCheck names this server on every reply (X-Superfluid-Instance), so a forwarding engine
// pointed at it can tell, and refuses a request whose X-Superfluid-Via already holds its id:
// a forwarding loop, 508 forwarding_loop. It runs before the guard, so even a reply refused
// for want of a key names the server. The chain a request came with is kept in its context
// for the forwarders that serve it to append to.
func viaCheck(id string) gin.HandlerFunc {
	return func(c *gin.Context) {
		c.Header(forward.InstanceHeader, id)
		chain := forward.ParseVia(c.GetHeader(forward.ViaHeader))
		if len(chain) == 0 {
			c.Next()
			return
		}
		if err := forward.CheckVia(id, chain); err != nil {
			writeError(c, err)
			c.Abort()
			return
		}
		c.Request = c.Request.WithContext(forward.WithVia(c.Request.Context(), chain))
		c.Next()
	}
}
