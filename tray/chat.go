package tray

// ChatController is what the playground needs beyond Chat and the saved conversations: how
// much of the model's window a conversation takes, search over saved chats, deleting and
// branching them.
type ChatController interface{}
