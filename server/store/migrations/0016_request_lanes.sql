-- Which team-mode lane served each request and through which engine kind (local, openai,
-- command): lane_name is the lane's name when the request came (the lane column is the
-- worker's sequence number, older); both '' for a request no lane served. Usage sums requests
-- by lane too, hence the index.
ALTER TABLE requests ADD COLUMN lane_name TEXT NOT NULL DEFAULT '';
ALTER TABLE requests ADD COLUMN engine TEXT NOT NULL DEFAULT '';
CREATE INDEX requests_lane_created_at ON requests (lane_name, created_at);
