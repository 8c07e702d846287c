/** The words tool search reads requests with: stop words, synonyms, verbs and qualifiers (src/lib/tool-search.ts). */

/** Words that say nothing about which tool is meant. */
export const STOPWORDS = new Set(
  "a an the my me i i'm im we our you your to of in on at for from with and or by is are be it its this that these those what whats which who when where how do does did can could would please about into all any some there their them s have has had just up out so as anything everything something than then been was were will want need like get got".split(
    ' ',
  ),
);

/**
 * How people ask against how tools are named: each word on the left also counts as the words on the right
 * (a little less than the word as written). Verbs map to the tool-name verbs, nouns to the APIs' nouns.
 */
export const SYNONYMS: Record<string, string[]> = {
  find: ['search'],
  look: ['search', 'get'],
  lookup: ['search'],
  show: ['list', 'get'],
  read: ['get', 'list'],
  see: ['list', 'get'],
  check: ['list', 'get'],
  view: ['list', 'get'],
  whats: ['list'],
  add: ['create'],
  new: ['create'],
  make: ['create'],
  put: ['create', 'add'],
  file: ['file'],
  log: ['create', 'note'],
  schedule: ['create', 'meeting', 'event'],
  scheduled: ['event', 'meeting', 'calendar'],
  book: ['create', 'event'],
  set: ['update'],
  setup: ['create'],
  open: ['create', 'get'],
  write: ['update', 'create'],
  overwrite: ['update'],
  change: ['update'],
  edit: ['update'],
  modify: ['update'],
  rename: ['update', 'move'],
  assign: ['assign', 'assignee'],
  // Everyday verbs: "fire off a note", "bin the spam", "bump the standup", "ack the alert", "kill the run".
  fire: ['send'],
  crank: ['set', 'update'],
  give: ['share', 'add'],
  shoot: ['send'],
  bin: ['trash', 'delete'],
  drop: ['delete', 'remove'],
  bump: ['update', 'move'],
  ack: ['acknowledge'],
  kill: ['cancel', 'stop', 'delete'],
  chuck: ['add', 'create'],
  stick: ['add', 'append', 'create'],
  throw: ['add', 'create'],
  jot: ['create', 'note'],
  dig: ['search'],
  access: ['share', 'permission'],
  owe: ['invoice'],
  owes: ['invoice'],
  paged: ['incident', 'alert'],
  blocking: ['issue'],
  blocker: ['issue'],
  spam: ['message', 'trash'],
  sound: ['speech', 'voice', 'audio'],
  speak: ['speech', 'voice'],
  aloud: ['speech', 'voice'],
  spanish: ['translate', 'language'],
  french: ['translate', 'language'],
  german: ['translate', 'language'],
  italian: ['translate', 'language'],
  portuguese: ['translate', 'language'],
  japanese: ['translate', 'language'],
  chinese: ['translate', 'language'],
  english: ['translate', 'language'],
  reassign: ['assign', 'assignee'],
  duplicate: ['copy'],
  clone: ['copy', 'fork'],
  charge: ['payment', 'charge'],
  pass: ['run', 'status', 'check'],
  passed: ['run', 'status', 'check'],
  passing: ['run', 'status', 'check'],
  fail: ['run', 'status', 'check'],
  failed: ['run', 'status', 'check'],
  failing: ['run', 'status', 'check'],
  fields: ['describe', 'field'],
  columns: ['describe', 'column'],
  schema: ['describe', 'schema'],
  reschedule: ['update', 'event'],
  move: ['move', 'update', 'transition'],
  mark: ['update', 'modify'],
  done: ['update', 'complete'],
  complete: ['update'],
  completed: ['update'],
  close: ['update'],
  remove: ['delete', 'trash', 'clear'],
  erase: ['delete', 'clear'],
  answer: ['reply', 'send'],
  gcal: ['google', 'calendar', 'event'],
  conflict: ['busy', 'free'],
  conflicts: ['busy', 'free'],
  cancel: ['delete', 'cancel'],
  delete: ['delete', 'trash'],
  post: ['send', 'create', 'message'],
  say: ['send', 'message'],
  tell: ['send', 'message'],
  reply: ['send', 'reply'],
  message: ['message', 'send', 'chat'],
  dm: ['message', 'chat', 'direct'],
  email: ['mail', 'message'],
  mail: ['email', 'message'],
  emails: ['mail', 'message'],
  inbox: ['message', 'mail'],
  unread: ['message', 'search'],
  archive: ['label', 'move'],
  star: ['label', 'star'],
  starred: ['label'],
  draft: ['draft'],
  meeting: ['meeting', 'event', 'calendar'],
  call: ['meeting'],
  appointment: ['event'],
  calendar: ['event', 'calendar'],
  agenda: ['event', 'calendar'],
  invite: ['event', 'invitation'],
  time: ['event', 'time'],
  today: ['event', 'calendar'],
  tomorrow: ['event', 'calendar'],
  tonight: ['event', 'calendar'],
  week: ['event', 'calendar'],
  monday: ['event', 'calendar'],
  tuesday: ['event', 'calendar'],
  wednesday: ['event', 'calendar'],
  thursday: ['event', 'calendar'],
  friday: ['event', 'calendar'],
  saturday: ['event', 'calendar'],
  sunday: ['event', 'calendar'],
  free: ['busy', 'free'],
  busy: ['free'],
  push: ['update', 'move'],
  queue: ['queue'],
  available: ['free', 'busy'],
  availability: ['free', 'busy'],
  latest: ['recent', 'history', 'latest'],
  recent: ['recent', 'history'],
  last: ['recent', 'latest'],
  lately: ['recently'],
  said: ['message', 'history'],
  tab: ['sheet', 'spreadsheet', 'range'],
  cell: ['range'],
  cells: ['range'],
  column: ['range'],
  row: ['row', 'record'],
  spreadsheet: ['spreadsheet', 'sheet'],
  server: ['guild'],
  servers: ['guild'],
  song: ['track'],
  songs: ['track'],
  music: ['track', 'playback'],
  tune: ['track'],
  liked: ['saved'],
  listening: ['played'],
  listened: ['played'],
  playing: ['currently', 'playing'],
  play: ['playback', 'start'],
  skip: ['next'],
  previous: ['previous'],
  volume: ['volume'],
  phone: ['contact'],
  person: ['contact'],
  people: ['contact', 'directory'],
  colleague: ['directory'],
  readme: ['readme', 'file', 'contents'],
  attended: ['participant'],
  attendee: ['participant'],
  register: ['registrant'],
  ticket: ['issue'],
  tickets: ['issue'],
  bug: ['issue'],
  pr: ['pull', 'request'],
  prs: ['pull', 'request'],
  repo: ['repository'],
  convo: ['conversation'],
  convos: ['conversation'],
  repos: ['repository'],
  ci: ['workflow', 'check', 'run'],
  approve: ['review', 'approve'],
  doc: ['document', 'page', 'doc'],
  note: ['note', 'page'],
  todo: ['task'],
  chore: ['task'],
  subscribed: ['subscription'],
  tweet: ['post', 'x'],
  tweets: ['post', 'x'],
  tweeted: ['post', 'x'],
  retweet: ['repost'],
  twitter: ['x'],
  feed: ['timeline'],
  mentions: ['mention'],
  follows: ['follower'],
  share: ['share', 'sharing', 'link'],
  link: ['link'],
  money: ['balance'],
  paid: ['payment'],
  unpaid: ['invoice'],
  bill: ['invoice'],
  refund: ['refund'],
  customer: ['customer'],
  deck: ['presentation', 'slide'],
  slides: ['presentation', 'slide'],
  slideshow: ['presentation', 'slide'],
  flyer: ['design'],
  poster: ['design'],
  moodboard: ['board', 'design'],
  sms: ['sms', 'message'],
  survey: ['form', 'response'],
  quiz: ['form'],
  revenue: ['payment', 'charge', 'balance'],
  newsletter: ['campaign', 'broadcast'],
  wiki: ['page'],
  esign: ['signature', 'envelope'],
  lead: ['record'],
  opportunity: ['record', 'query'],
  opportunities: ['record', 'query'],
  visitors: ['report', 'analytics'],
  traffic: ['report', 'analytics'],
  assigned: ['assign', 'assignee'],
  assignee: ['assignee', 'assigned'],
  mine: ['my'],
};

/** Words naming a whole suite of providers, not one of them. */
export const SUITE_WORDS = new Set(['google', 'microsoft']);

/** Request words that ask to read, and words that ask to change something; the first one found decides. */
export const READ_VERBS = new Set(
  'what whats which who when where how any list show find search read see check view get look lookup display count did have dig'.split(
    ' ',
  ),
);
export const WRITE_VERBS = new Set(
  'add create new make put post send reply draft write update edit change set rename move mark close complete delete remove trash archive cancel assign reassign fire shoot bin drop bump ack kill chuck stick throw jot start stop crank give share schedule book invite log file comment merge approve star like follow bookmark retweet tweet upload append clear pause skip play accept decline redeploy rerun subscribe refund charge request duplicate clone transition label react message dm ping push email mail text answer reschedule'.split(
    ' ',
  ),
);

/** Words that, before "request(s)", name a kind of request: a merge request is a thing, not an ask to merge. */
export const REQUEST_KINDS = new Set(['merge', 'change', 'pull', 'feature']);
export const REQUEST_WORDS = new Set(['request', 'requests']);

/** Verbs that name a kind of action, not a thing: "find", "show", "create". */
export const GENERIC_VERBS = new Set(
  'find look lookup show read see check view get list search display add create new make update edit change modify set remove delete erase send'.split(
    ' ',
  ),
);

/** Words that narrow what is asked (when, which ones) rather than say it: they count half. */
export const QUALIFIERS = new Set(
  'last latest recent recently lately today tomorrow tonight yesterday week month year monday tuesday wednesday thursday friday saturday sunday next previous upcoming old new first current open unread all'.split(
    ' ',
  ),
);

/** Nouns used as verbs ("email the team"): what they mean as the request's action. */
export const VERB_MEANS: Record<string, string[]> = {
  // An action many APIs name create_<thing> (create_refund, create_payment_intent).
  refund: ['refund', 'create'],
  assign: ['assign', 'add', 'update'],
  reassign: ['assign', 'add', 'update'],
  tweet: ['create', 'post'],
  charge: ['create', 'charge'],
  request: ['request'],
  email: ['send'],
  mail: ['send'],
  message: ['send'],
  dm: ['send'],
  text: ['send'],
  ping: ['send'],
};

/** Nouns that are verbs only when they open the request. */
export const NOUN_VERBS = new Set(['email', 'mail', 'message', 'text', 'dm', 'ping', 'request', 'charge', 'new']);
export const POLITE = new Set([
  'please',
  'pls',
  'kindly',
  'go',
  'ahead',
  'quickly',
  'also',
  'now',
  'then',
  'let',
  'lets',
]);

export const DETERMINERS = new Set(
  'the a an my this that these those your our his her their its every each anything something nothing'.split(' '),
);

/**
 * A request's phrases rewritten, in this order, before its words are read: how people put it against how tools
 * are named, and signs of what a request is about (a time, an e-mail address, a #channel, an @account).
 */
export const REWRITES: ReadonlyArray<readonly [RegExp, string]> = [
  // "to do" is one word to people and a provider (Microsoft To Do) to us.
  [/\bto[\s-]?dos?\b/gi, 'todo'],
  [/\bset\s+up\b/gi, 'setup'],
  // Phrasal verbs people use for what tools call create, start, send, reply, refund.
  [/\bspin\s+up\b/gi, 'create'],
  [/\bkick\s+off\b/gi, 'start'],
  [/\bfire\s+off\b/gi, 'send'],
  [/\bget\s+back\s+to\b/gi, 'reply'],
  [/\bmoney\s+back\b/gi, 'refund'],
  // To pull something up is to show it; to open an issue, a pull request or a merge request is to create one.
  [/\bpull\s+up\b/gi, 'show'],
  // An article or "new" (or both: "open a new ticket") is what makes it a request to create: "open issues" are
  // issues not yet closed.
  [
    /\bopen\s+(?:(?:an?|another)\s+new|an?|new|another)\s+(issue|ticket|bug|pr|pull\s+request|merge\s+request|mr)\b/gi,
    'create $1',
  ],
  // To text someone is to send an SMS; to block off a time, to book it; "remind me to" asks for a task; whom
  // one reports to is one's manager.
  [/^\s*text\b/i, 'send sms'],
  [/\bblock\s+(off|out)\b/gi, 'schedule'],
  [/\bremind\s+me\s+to\b/gi, 'create task to'],
  // ...unless the question is who reports to someone: their direct reports.
  [/\bwho\s+reports?\s+to\b/gi, 'direct reports of'],
  [/\breports?\s+to\b/gi, 'manager'],
  // Signing a document (not signing in or out): an e-signature.
  [/\be-?sign(ed|ing)?\b|\bto\s+sign\b|^\s*sign\b(?!\s+(in|out|up|off)\b)/gi, 'esign'],
  // "How many" asks for a count (count_contacts).
  [/\bhow\s+many\b/gi, 'count'],
  // "Issue a refund, an invoice, a card": create one (not an issue tracker's issue).
  [/^\s*issue\s+(an?)\b/i, 'create $1'],
  // "Did I get anything from the bank?": mail received.
  [/\b(did\s+i\s+get|have\s+i\s+got|got)\s+anything\s+from\b/gi, 'inbox email from'],
  [/\bthumbs?\s+up\b/gi, 'like'],
  [/\bassigned\s+to\s+me\b/gi, 'mine assignee'],
  // A time of day ("2pm", "10:30") says calendar.
  [/\b\d{1,2}(:\d{2})?\s*(am|pm)\b|\b\d{1,2}:\d{2}\b/gi, ' time '],
  // An e-mail address says "e-mail", a #name a channel, an @name an account.
  [/[\w.+-]+@[\w-]+\.[\w.]+/g, ' email '],
  [/(^|\s)#[\w-]+/g, ' channel '],
  [/(^|\s)@\w+/g, ' user '],
  // An r/name is a subreddit.
  [/(^|\s)\/?r\/\w+/g, ' reddit subreddit '],
];
