/**
 * Weighted injection rules by attack family, written for folded text (lower case, accents removed, see
 * injection-normalize.ts), in English, French, German, Spanish, Chinese, Portuguese and Italian; more
 * Portuguese and Italian, and Russian, Japanese and Arabic, are in injection-rules-intl.ts. A rule's weight
 * says how much the phrase alone proves: 1 blocks on its own, smaller weights need company.
 * Tuned on the `tuning` part of test/fixtures/injection-corpus.json and on injection-tuning-v2.json only.
 */
import { G, type InjectionRule, rule, Z } from './injection-rule.ts';
import { INTL_RULES } from './injection-rules-intl.ts';

export type { InjectionFamily, InjectionRule } from './injection-rule.ts';

const INSTRUCTION_NOUNS_EN = `(instructions?|rules|directives?|directions|guidelines|guidance|guardrails|prompts?|system (message|prompt)|polic(y|ies)|programming|constraints|the above|everything (above|before)|everything you('ve| have)? (been|were) (told|instructed|given)|what you (were|have been) told|whatever (the operator|they|you were) told you|all prior|all previous|setup instructions|configuration)`;

export const INJECTION_RULES: InjectionRule[] = [
  // --- override: drop the instructions in force
  rule(
    'override',
    'override-en',
    1,
    // A description ("my chatbot ignores the system prompt", "the model can't ignore rules") is not an order.
    `(?<!(cannot|can't|can not|won't|will not|not|never|bot|chatbot|model|it|assistant|llm|agent|ai|gpt|they|he|she|that|which|who|sometimes|often|still|always|users?|people) )\\b(ignore|disregard|forget|neglect|discard|abandon|drop|throw out|set aside|pay no attention to|(don'?t|do not) pay (any )?attention to|don'?t (follow|obey)|do not (follow|obey)|stop following|never mind|override|bypass)\\b${G}\\b${INSTRUCTION_NOUNS_EN}`,
  ),
  rule(
    'override',
    'override-void-en',
    1,
    `\\b(previous|prior|earlier|above|original|old|former)? ?(instructions|rules|guidelines|directives|directions|guidance)( you (were given|got|received))?( before)?\\b${G}\\b(are|is|were|have been|has been)? ?(now )?(void|revoked|cancell?ed|annulled|retired|replaced|obsolete|null|no longer (apply|valid|in effect))|\\b(your( previous| prior| earlier| original| initial)?|the system'?s?|all (earlier|prior|previous)) (instructions|rules|guidelines|directives|guidance|constraints|restrictions|setup|configuration)( (you|that you) (were|have been) (given|configured with|told))?\\b${G}\\b(have |has )?(expired|been lifted|lifted|suspended|no longer appl(y|ies)|(do not|don'?t|does not|doesn'?t) (apply|count|matter) anymore)\\b|\\b(guidance|constraints|restrictions|rules|instructions) (that |which )?(you )?(were|have been) (given|configured with|loaded|set)\\b${G}\\b(are |is |have been )?(now )?(lifted|void|cancell?ed|revoked|expired|suspended|no longer appl(y|ies))\\b|\\btreat\\b${G}\\b(instructions|rules|directives|guidelines)\\b${G}\\bas (cancell?ed|void|obsolete|null|revoked)\\b`,
  ),
  rule(
    'override',
    'override-content-en',
    1,
    `\\bignore (all |the )?(previous|prior|above|preceding) (content|text|context|conversation|input)`,
  ),
  rule(
    'override',
    'new-task-en',
    0.6,
    `\\byour (new|real|actual|only|true) (task|job|goal|instructions?|role|purpose|mission|objective)\\b|\\bnew (instructions?|directives?|orders)\\s*(:|follow|below)|\\bnothing (you were|you've been|you have been) (told|given|instructed)\\b`,
  ),
  rule('override', 'scratch-en', 0.5, `\\bscratch (all|everything|that)\\b`),
  rule(
    'override',
    'set-aside-en',
    1,
    `\\b(set|put|push|leave)\\b${G}\\b(instructions|rules|programming|guidelines|guidance|directives|constraints)\\b${G}\\baside\\b`,
  ),
  rule(
    'override',
    'obey-en',
    0.5,
    `\\b(obey|comply with|follow) (me|my (orders|commands|instructions)|the following|what i say|all requests|every request)\\b|\\bdo (exactly )?(what|as) i say\\b|\\bjust comply\\b`,
  ),
  rule(
    'override',
    'override-fr',
    1,
    `(?<!(cannot|can't|can not|won't|will not|not|never) )\\b(ignore[rz]|ignore(?= (toutes |tous )?(les|tes|vos|ces|ce que)\\b)|oublie[rsz]?|ne (tiens|tenez) pas compte|fais abstraction|faites abstraction|neglige[rz]?)\\b${G}\\b(instructions?|consignes?|regles|directives|prompt|tout ce qu)`,
  ),
  rule(
    'override',
    'override-void-fr',
    1,
    `\\b(instructions|consignes|regles)( precedentes| anterieures)? (sont|est) (annulees|caduques|obsoletes|remplacees)`,
  ),
  rule(
    'override',
    'obey-fr',
    0.5,
    `\\b(obeis|obeissez|suis les miennes|fais ce que je (dis|demande)|obbedisci|obedeca)\\b`,
  ),
  rule(
    'override',
    'override-de',
    1,
    `\\b(ignorier\\w*|vergiss|vergessen sie|missacht\\w*|setz\\w* (dich|sich) uber)\\b${G}\\b(anweisungen|regeln|vorgaben|systemvorgaben|richtlinien|alles,? was)`,
  ),
  rule(
    'override',
    'override-void-de',
    1,
    `\\b(anweisungen|regeln|vorgaben)\\b${G}\\b(gelten nicht mehr|sind (aufgehoben|ungultig|hinfallig))`,
  ),
  rule('override', 'obey-de', 0.5, `\\b(gehorche|befolge ab jetzt|tu,? was ich sage)\\b`),
  rule(
    'override',
    'override-es',
    1,
    `\\b(ignora\\w*|olvida\\w*|no hagas caso|haz caso omiso|omite|descarta\\w*)\\b${G}\\b(instrucciones|reglas|directrices|indicaciones|normas|prompt|todo lo que)`,
  ),
  rule(
    'override',
    'override-void-es',
    1,
    `\\b(instrucciones|reglas|indicaciones)\\b${G}\\b(quedan anuladas|ya no (valen|aplican)|estan anuladas)`,
  ),
  rule('override', 'obey-es', 0.5, `\\b(obedeceme|obedece|sigue las mias|haz lo que (te pido|digo))\\b`),
  rule(
    'override',
    'override-pt-it',
    1,
    `\\b(ignore|esqueca|desconsidere|ignora|dimentica)\\b${G}\\b(instrucoes|regras|diretrizes|istruzioni|regole)`,
  ),
  rule(
    'override',
    'override-zh',
    1,
    `(忽略|无视|忽视|忘掉|忘记|不要理会|别管|不要遵守|不理会)${Z}(指令|指示|规则|提示|命令|设定)|(之前|以上|上面|先前)的?(所有)?(指令|指示|规则)${Z}(作废|无效|失效|取消)|(忽略|无视)(以上|上面|之前)的?(所有)?(内容|文字)`,
  ),
  rule('override', 'obey-zh', 0.5, `(听我的|按照我说的做|执行我的命令|遵循我的新指令)`),

  // --- role-play and persona jailbreaks: a persona plus the promise of no limits
  rule(
    'roleplay',
    'persona-en',
    0.5,
    `\\b(you are now|you're now|from now on,? you|act as|pretend (to be|you'?re|you are)|imagine (you'?re|you are)|role-?play as|play the role|let'?s play a game|let'?s pretend|simulate|become an?|respond as|answer as)\\b`,
  ),
  rule(
    'roleplay',
    'unbound-en',
    0.7,
    `\\b(no|without( any)?|free of|free from|freed from|broken free of|broke free of|ignores?|bypass(es)?|if you had no) (\\w+ ){0,2}(rules|restrictions|limits|limitations|filters?|guidelines|content polic(y|ies)|censorship|ethical restrictions|ethics|morals)\\b|\\b(unrestricted|unfiltered|uncensored|jailbroken|do anything now|never refuses?|stay in character|never break character|god mode)\\b|\\bno rules\\b`,
  ),
  rule('roleplay', 'named-jailbreak-en', 0.6, `\\b(you are|you're|as) (now )?(dan|stan|dude|evilbot|\\w+gpt)\\b`),
  rule(
    'roleplay',
    'dev-mode',
    0.4,
    `\\b(developer|dev|god|debug|jailbreak) mode\\b|mode developpeur|entwicklermodus|modo desarrollador|开发者模式`,
  ),
  rule(
    'roleplay',
    'dev-mode-unbound',
    0.6,
    `\\b(developer|dev|god|debug) mode\\b${G}\\b(no|without|ignore|anything|unrestricted|limits|restrictions|rules|safety)\\b`,
  ),
  rule(
    'roleplay',
    'persona-fr-de-es-pt-it',
    0.5,
    `\\b(joue le role|fais semblant|faites semblant|imagine que tu es|a partir de maintenant,? tu es|tu es maintenant|agis comme|incarne|spiel die rolle|tu so,? als|stell dir vor,? du bist|ab jetzt bist du|du bist jetzt|actua como|finge que|finge ser|imagina que eres|a partir de ahora eres|ahora eres|finja que|fingi di|fai finta)\\b`,
  ),
  rule(
    'roleplay',
    'unbound-fr-de-es-pt-it',
    0.7,
    `\\bsans (aucune )?(restrictions?|limites?|filtres?|censure|regles)\\b|\\bliberee? de (toutes )?(ses|tes) regles|\\bplus de limites\\b|\\bsans censure\\b|\\breste dans (ton|le) personnage|\\bohne (jegliche )?(einschrankungen|regeln|filter|zensur|grenzen)\\b|\\bunzensiert\\w*|\\bbleib in der rolle\\b|\\bkeine regeln\\b|\\bsin (ninguna )?(restricciones?|limites|filtros?|censura|reglas)\\b|\\blibre de (todas )?(sus|tus) reglas|\\bno salgas del personaje|\\bya no tienes limites\\b|\\bsem (restricoes|limites|filtros|censura)\\b|\\bsenza (alcuna )?(restrizion[ei]|limiti|filtri|censura)\\b`,
  ),
  rule('roleplay', 'persona-zh', 0.5, `(扮演|假装你是|假装你|想象你是|从现在开始你是|你现在是)`),
  rule(
    'roleplay',
    'unbound-zh',
    0.7,
    `(没有任何限制|没有限制|不受限制|摆脱了?所有规则|没有过滤|未经审查|无审查|保持角色|从不拒绝)`,
  ),

  // --- fake system, admin or developer messages and chat markup
  rule(
    'fake-system',
    'chat-markup',
    1,
    // Markup that opens a system or developer turn. Naming a token ("why does ChatML use <|im_start|>?") or a
    // Markdown heading ("### System requirements") is not one.
    `<\\|im[ _]start\\|>\\s*(system|developer|assistant)\\b|<\\|(system|developer)\\|>|<<\\/?sys>>|<\\/?(system|admin|developer|instructions?|sys)>|-{3,}\\s*(begin|end) system|\\[\\[\\s*(system|admin|operator|developer)[^\\]]{0,30}\\]\\]|\\[inst\\][^\\n]{0,300}\\[\\/inst\\]|###\\s*(instruction|system|developer|systeme|sistema|система|システム|النظام|系统)[a-z]*\\s*(message|prompt|note)?\\s*[:：\\n]`,
  ),
  rule(
    'fake-system',
    'chat-markup-weak',
    0.5,
    `<\\|[a-z_ ]+\\|>|\\[/?inst\\]|\\{\\s*"role"\\s*:\\s*"(system|developer)"|\\[\\s*(system|admin|operator|developer|sistema|systeme|система|システム|النظام|系统)[^\\]\\n]{0,30}\\]`,
  ),
  rule(
    'fake-system',
    'tool-frame',
    0.5,
    // A forged tool result or turn boundary inside a text: the text pretends to end and something else to begin.
    `\\b(begin|end) (of )?(tool|function) (output|result|response)\\b|\\btool (output|result) \\((trusted|verified)\\)|<\\/?(tool_response|tool_result|function_result|function_call|tool_call|tool_output|function_response)\\b|<\\/(user|assistant|human)>|(^|\\n)\\s*assistant\\s*:\\s*(sure|ok|okay|understood|executing|certainly|of course)\\b`,
  ),
  rule(
    'fake-system',
    'role-header',
    0.7,
    `(^|\\n|[\\]>-]\\s?)\\s*(#+\\s*)?(system|systeme|sistema|admin|administrator|administrateur|administrador|developer|operator|系统|система|システム|النظام)\\s*(message|note|notice|override|prompt)?\\s*[:：]`,
  ),
  rule(
    'fake-system',
    'authority-claim',
    0.7,
    `\\b(message|note|notice|instruction|update|directive)s? from (the |your )?(admin|administrator|developers?|operator|system|openai|anthropic|staff|security team)\\b|\\b(admin|administrator|developer|operator|system)'?s? (message|note|notice|override)\\b|\\bpriority instruction\\b|\\bsystem override\\b|\\b(message|note) (de l'|du )(administrateur|developpeur|systeme)|\\bmessage administrateur\\b|\\b(nachricht|hinweis) (vom|der|des) (administrator|entwickler)|\\badmin-nachricht\\b|\\b(mensaje|nota) del (administrador|desarrollador|sistema)|(来自管理员|开发者通知|管理员消息|系统通知)`,
  ),
  rule(
    'fake-system',
    'checks-disabled',
    0.8,
    `\\b((safety|security|content) (checks?|filters?|filtering|guardrails|restrictions|polic(y|ies))|(assistant'?s|your|all) (restrictions|filters|guardrails|limitations))\\b${G}\\b(disabled|turned off|lifted|removed|suspended|deactivated)\\b|\\b(controles?|verifications?) de securite\\b${G}\\bdesactive|\\b(sicherheitsprufungen|schutz|filter|sicherheitsrichtlinie)\\b${G}\\b(deaktiviert|abgeschaltet|aufgehoben)|\\bcontroles de seguridad\\b${G}\\bdesactivados|(安全检查|过滤|限制)${Z}(已|被)?(关闭|禁用|解除|取消)`,
  ),

  // --- prompt leak: repeat, translate or encode the hidden prompt
  rule(
    'prompt-leak',
    'leak-en',
    1,
    `\\b(repeat|print|show|output|reveal|display|tell me|give me|paste|quote|write|spell out|summarize|translate|encode|list|dump|leak|disclose|share|reproduce|recite|what (is|are|were))\\b${G}\\b((your|the) system (prompt|message|instructions)|(confidential|hidden|secret) configuration|your (initial |original |hidden |secret |confidential |full |first )?(instructions|prompt|rules|directives|guidelines|preamble|configuration)|hidden (prompt|instructions|preamble|rules)|initial (instructions|prompt)|the prompt that (configures|controls) you|(confidential|secret) (rules|instructions)|pre-?prompt|context window)`,
  ),
  rule(
    'prompt-leak',
    'your-prompt',
    1,
    // The agent's own hidden prompt is never the subject of an ordinary request, whatever the verb.
    `\\byour (system prompt|(initial|original|hidden|secret|confidential|first|starting) (instructions|prompt|rules))\\b|\\b(ton|votre) prompt systeme\\b|\\b(dein|ihr) (systemprompt|system-prompt)\\b|\\btu prompt (de|del) sistema\\b|\\b(seu|teu) prompt (de|do) sistema\\b|\\b(suas|tuas) instrucoes (iniciais|ocultas|secretas|originais)\\b|\\btuo prompt di sistema\\b|\\btue istruzioni (iniziali|nascoste|segrete|originali)\\b|(твой|свой|ваш|твоего|своего|вашего|твоем|своем|у тебя|у вас) системн\\p{L}* (промпт|инструкци)|(своих|твоих|ваших|свои|твои|ваши) (начальн|исходн|скрыт|секретн|первоначальн)\\p{L}* (инструкци|правил)|あなたの(システムプロンプト|システム指示|隠し指示|初期指示)|最初の指示(?!書)|موجه النظام الخاص بك|تعليماتك (الاوليه|المخفيه|السريه|الاصليه)|你的系统提示`,
  ),
  rule(
    'prompt-leak',
    'text-above-en',
    1,
    `\\b(repeat|print|output|quote|copy)\\b${G}\\b(text|words|everything|content)\\b${G}\\b(above|before my|preceding)\\b|\\bstarting with "?you are\\b|\\bwhat (were|have) you (been )?told\\b|\\bbefore (this|our) conversation (started|began)`,
  ),
  rule(
    'prompt-leak',
    'verbatim',
    0.3,
    `\\b(verbatim|word for word|exactly|mot pour mot|wortwortlich|palabra por palabra|逐字|原样)`,
  ),
  rule(
    'prompt-leak',
    'leak-fr-de-es-pt-it',
    1,
    `\\b(repete|affiche|montre|revele|donne|cite|encode|ecris|traduis|quelles sont)\\b${G}\\b(ton|tes|votre|vos) (prompt|instructions|consignes|regles)|\\b(ton|votre) prompt systeme\\b|\\b(tes|vos) (instructions cachees|consignes initiales)\\b|\\btexte (au-dessus|ci-dessus)|\\b(wiederhole|zeig|gib|nenne|kodiere|verrate|was sind)\\b${G}\\b(dein|deine|deinen|ihre|ihren)\\s*(vollstandigen |versteckten |ursprunglichen |geheimen )?(systemprompt|system-prompt|anweisungen|regeln|vorgaben)|\\btext oben\\b|\\b(repite|muestra|muestrame|revela|dame|cita|codifica|cuales son|ensename|mostre|revele|repita|mostrami|rivela|ripeti)\\b${G}\\b(tu|tus|su|sus|seu|suas|tuo|tue)\\s+(prompt|instrucciones|reglas|indicaciones|instrucoes|istruzioni)|\\btexto de arriba\\b`,
  ),
  rule(
    'prompt-leak',
    'leak-zh',
    1,
    `(显示|输出|重复|告诉我|给我看|打印|编码|引用|展示)${Z}(系统提示词?|隐藏指令|初始指令|系统指令)|你的(隐藏|初始|系统)?(指令|提示词?)是什么|(系统提示词?|隐藏指令|初始指令)${Z}(显示|输出|打印|告诉|展示)|(重复|复述)上面`,
  ),

  // --- credential and data exfiltration
  rule(
    'exfiltration',
    'secret-reveal-en',
    1,
    // "Never share your password" is advice, not an order.
    `(?<!(never|not|n't|no one should|nobody should|never to|not to) )\\b(list|give|show|print|display|reveal|paste|dump|read|retrieve|include|output|tell me|send|post|upload|copy|append|leak|share|collect|gather|harvest|extract|export)\\b${G}\\b(api keys?|access tokens?|refresh tokens?|bearer tokens?|auth(entication)? tokens?|session cookies?|passwords?|credentials|secrets|private keys?|personal access tokens?|oauth tokens?|activation keys|license keys|credit card (numbers?|details))|\\b(dump|leak|exfiltrate)\\b${G}\\b(tokens?|keys)\\b|\\b(list|give|show|print|display|reveal|paste|dump|read|send|post|upload|copy|leak)\\b${G}\\.env\\b(?!\\.(example|sample|template|dist))`,
  ),
  rule(
    'exfiltration',
    'secret-question-en',
    0.8,
    `\\bwhat(?:'s| is| are)\\s+(the|my|your)\\s+(\\w+\\s+){0,2}(tokens?|api keys?|passwords?|secrets?|credentials)\\s+(for|of|on|in)\\b`,
  ),
  rule(
    'exfiltration',
    'all-secrets',
    0.6,
    `\\b(all|every|stored)\\b[^.\\n]{0,15}\\b(secrets|passwords|credentials|api keys|tokens)\\b|\\b(tous|toutes) les (secrets|mots de passe|jetons)|\\b(alle|samtliche) (geheimnisse|passworter|zugangsdaten|tokens)|\\b(todos|todas) los (secretos|tokens|contrasenas)|所有(存储的)?(密钥|密码|令牌)`,
  ),
  rule(
    'exfiltration',
    'external-destination',
    0.4,
    `\\b(send|forward|post|upload|copy|email|mail|transmit|exfiltrate|envoie|transfere|schicke?|sende|leite|envia|reenvia|invia|envie|encaminhe|reencaminhe|inoltra|mande|manda)\\b[^\\n]{0,80}(https?://|[\\w.+-]+@[\\w-]+\\.[\\w.]+|\\bwebhook\\b|public gist|pastebin|this (e-?mail )?address|cette adresse|diese (e-mail-)?adresse|esta direccion|这个邮箱)`,
  ),
  rule(
    'exfiltration',
    'bulk-forward',
    0.6,
    `\\b(forward|send|upload|copy|exfiltrate|email)\\b[^.\\n]{0,20}\\b(all|every|the whole|whole|entire|the inbox)\\b[^.\\n]{0,25}\\b(emails?|inbox|mail|mailbox|messages|documents?|files|folders?|drive|contacts|calendar)\\b|\\b(forward|send|upload|copy|exfiltrate|email)\\b[^.\\n]{0,20}\\b(my|the|their|the user'?s) (whole |entire )?(inbox|mailbox|drive)\\b|\\b(transfere|envoie)\\b[^.\\n]{0,10}\\b(tous|toutes|la boite de reception)\\b|\\b(leite|schick)\\b[^.\\n]{0,10}\\balle\\b|\\b(reenvia|envia)\\b[^.\\n]{0,10}\\b(todos|todas|todo el)\\b|(所有|全部)${Z}(邮件|文件|文档)${Z}(转发|发送|发)|收件箱转发`,
  ),
  rule(
    'exfiltration',
    'victim-data',
    0.4,
    `\\b(the user'?s|user's|their|the victim'?s)\\b[^.\\n]{0,20}\\b(emails?|passwords?|tokens?|data|files|credentials|inbox|auth|card details|card numbers?)|de l'utilisateur|des benutzers|del usuario|用户的`,
  ),
  rule(
    'exfiltration',
    'image-exfil',
    0.6,
    `\\b(render|display|show)\\b[^.\\n]{0,20}\\bas an? image\\b|!\\[[^\\]]*\\]\\(https?://[^)]*\\?`,
  ),
  rule(
    'exfiltration',
    'secret-reveal-intl',
    1,
    `\\b(donn|affich|montr|envoi|envoy|transfer|revel|list|copi|coll)\\w*\\b${G}\\b(jetons? d'(acces|authentification)|cles? (api|d'api)|mots? de passe|identifiants|cle privee|cookies de session)|\\b(gib|zeig|schick|sende|verrate|nenne|liste|kopiere)\\b${G}\\b(zugangstoken|zugriffstoken|api-schlussel|passwort|passworter|kennwort|kennworter|zugangsdaten|privaten schlussel|tokens)\\b|\\b(dame|muestra|muestrame|envia|enviame|reenvia|revela|lista|copia|pega)\\b${G}\\b(tokens? de (acceso|autenticacion)|claves? (api|de api)|contrasenas?|credenciales|clave privada)|\\b(me de|de-me|mostre|envie|revele|dammi|mostra|invia|mandami)\\b${G}\\b(tokens de acesso|chaves de api|senhas?|token di accesso|chiavi api|password)|(给我|显示|发送|发给|转发|告诉我|列出|输出|把)${Z}(访问令牌|认证令牌|API密钥|api密钥|密钥|密码|凭证|凭据|私钥)`,
  ),
  rule('exfiltration', 'show-it', 0.3, `\\b(print|show|paste|display|give me|send me) (it|them)\\b`),
  rule('exfiltration', 'steal', 0.6, `\\bsteal\\w*\\b${G}\\b(credentials|passwords|tokens|keys)\\b`),

  // --- permission escalation and disabling confirmations
  rule(
    'escalation',
    'self-escalation-en',
    1,
    `\\b(grant|give|make|add|elevate|promote|change|set|upgrade)\\s+(me|my(\\s+\\w+){1,2}|this (user|session|account)|yourself|the (author|sender|caller)|this (document|file|email)'?s author)\\b[^.\\n]{0,40}\\b(admin\\w*|owner|root|superuser|sudo|full scope|full access|privileges?|permissions? to)\\b|\\b(elevate|escalate)\\b${G}\\b(privileges?|permissions?|session|access|root)\\b`,
  ),
  rule(
    'escalation',
    'disable-checks-en',
    1,
    `\\b(disable|turn off|switch off|remove|deactivate|bypass|skip|lift)\\b${G}\\b(safety|content|security)? ?(checks?|filters?|filtering|guardrails|confirmations?|confirmation requirement|approval( step)?|authorization( check)?|permission checks?|moderation)\\b`,
  ),
  rule(
    'escalation',
    'no-asking',
    0.5,
    `\\bwithout (asking|approval|confirmation|permission|telling|asking anyone|(any )?checks|verification)\\b|\\bsans (demander|confirmation)\\b|\\bohne (nachzufragen|zu fragen|bestatigung)\\b|\\bsin (preguntar|confirmacion)\\b|\\bsem perguntar\\b|\\bsenza chiedere\\b|不要询问|无需确认`,
  ),
  rule(
    'escalation',
    'escalation-intl',
    1,
    `\\b(donne|accorde|attribue|ajoute)\\b[^.\\n]{0,30}\\b(mon compte|moi|mon role)\\b[^.\\n]{0,30}\\b(droits d'?administrat\\w*|administrateur|proprietaire|super-?utilisateur|root)|\\b(desactive|contourne|coupe)\\b${G}\\b(confirmation|verification des autorisations|controles? de securite|filtres?|garde-fous)|\\b(gib|erteile|verleihe|mach)\\b[^.\\n]{0,30}\\b(meinem konto|mir|mich)\\b[^.\\n]{0,30}\\b(administratorrechte|adminrechte|admin-rechte|administrator|root|superuser)|\\b(deaktiviere|umgehe|uberspringe)\\b${G}\\b(bestatigung|berechtigungsprufung|sicherheitsprufung\\w*|filter)|\\b(dale|da|concede|otorga|agrega)\\b[^.\\n]{0,30}\\b(mi cuenta|me|mi rol)\\b[^.\\n]{0,30}\\b(permisos de administrador|administrador|propietario|root|superusuario)|\\b(desactiva|omite|elude)\\b${G}\\b(confirmacion|comprobacion de permisos|verificacion|controles de seguridad|filtros)|\\b(de|conceda|dai|concedi)\\b[^.\\n]{0,30}\\b(minha conta|mio account)\\b[^.\\n]{0,30}\\b(administrador|amministratore)|(授予|给予|给)(我|我的账户|我的帐户)${Z}(管理员|超级用户|root|所有者)|(关闭|绕过|跳过|禁用)${Z}(确认|权限检查|安全检查|过滤|审核)`,
  ),

  // --- instructions hidden behind an encoding ("decode and follow")
  rule(
    'obfuscation',
    'decode-and-follow',
    0.5,
    `\\b(decode|decrypt|decipher|run this|process it as instructions|execute this)\\b|\\bdecode\\b${G}\\b(follow|execute|obey|run)\\b|\\bdecode (ceci|esto)|\\bdekodiere\\b`,
  ),

  // --- indirect injection: text inside a document, page, e-mail or tool result that turns to the AI reading it
  rule(
    'indirect',
    'ai-addressed',
    0.5,
    `\\b(note|message|instructions?|attention|p\\.?s\\.?|important|reminder|notice)\\b[^\\n]{0,12}\\b(to|for) (the |any |all )?(ai|assistant|language model|llm|model|bot|agent|chatbot|ai (assistant|model|agent|reviewer|system))s?\\b|\\b(dear|hey|hi|attention|hello) (ai|model|assistant|bot|language model|llm|agent|ai assistant)\\b|\\b(ai|assistant|language model|llm|model|agent)s? (reading|processing|summari[sz]ing|parsing|reviewing) this\\b|\\bif you are an? (ai|language model|llm|assistant|ai (assistant|model|agent))\\b|(^|\\n|[\\[(>])\\s*@?(ai|assistant|bot|ai[- ]assistant|ai reviewer|ai agent)\\s*[:,]|\\bnote pour l'(ia|assistant)|\\bhinweis (an|fur) (den |die )?(ki|assistenten|ki-assistenten)\\b|\\bnota para (el |la |o |a )?(ia|asistente|assistente)\\b|\\bnota per l'(ia|assistente)\\b|(给|致)ai(助手)?(的)?|ai助手[：:]`,
  ),
  rule(
    'indirect',
    'ignore-the-user',
    0.7,
    `\\b(ignore|disregard|forget)\\b (the |this )?(user'?s?|human'?s?|reader'?s?|original) ?(request|question|task|instructions?|prompt)?\\b|\\bignore your (task|job|assignment)\\b|\\bstop what you('re| are) doing\\b|\\binstead,? (reveal|send|forward|print|delete|export|grant|share|email)\\b|\\b(ignore l'utilisateur|oublie la demande de l'utilisateur)\\b|\\b(ignoriere den (nutzer|benutzer)|vergiss die anfrage des (nutzers|benutzers))\\b|\\b(ignora al usuario|olvida la peticion del usuario)\\b|(忽略用户|忘记用户的请求|无视用户)`,
  ),
  rule(
    'indirect',
    'user-authorized',
    0.5,
    `\\b(the user|user|your owner) has (already )?(authorized|allowed|permitted|approved) you\\b`,
  ),
  rule(
    'indirect',
    'stealth',
    0.5,
    `\\b(don'?t|do not|never) (mention|tell|inform|notify|alert)\\b|\\b(quietly|silently|secretly|covertly) (forward|send|delete|copy|upload|export|share|add|grant|remove|cancel|email)\\b|\\bwithout (informing|notifying|alerting) (the user|them|him|her|me|anyone)\\b`,
  ),
  rule(
    'escalation',
    'destructive-bulk',
    0.5,
    `\\b(delete|remove|erase|wipe|purge|cancel|trash)\\b (all|every|each)\\b[^.\\n]{0,30}\\b(files?|emails?|events?|meetings?|messages?|documents?|contacts?|records?|repos|repositories|folders?)\\b|\\b(delete|wipe|erase)\\b (everything|the whole)\\b|\\bsupprime (tous|toutes|tout)\\b|\\blosche alle\\b|\\b(borra|elimina) (todos|todas|todo)\\b`,
  ),
  rule(
    'exfiltration',
    'env-dump',
    0.5,
    `\\b(print|dump|list|show|output|include|reveal|paste|send)\\b${G}\\b(env(ironment)? (variables|vars)|\\.env file)\\b`,
  ),

  // --- talk about attacks (how to defend, explain, research) rather than an attack: lowers the score
  rule(
    'meta',
    'meta-question',
    -0.5,
    `^\\s*(how|where|why|is it|explain|should|when|comment|wie|como|que es|qu'est-ce)\\b|^\\s*(如何|怎么|怎样|为什么|什么是)|\\b(conceptually|research|blog post|neutral summary|defen[cs]es?|how (do|can|should) (i|we) (prevent|defend|protect|stop|detect|keep))\\b`,
  ),
  rule('meta', 'quoted-mention', -0.5, `^\\s*what (does|do|is meant by) ['"“‘«]`),
  rule(
    'meta',
    'translate-quoted',
    -0.5,
    // A sentence to translate is quoted text, not an order to the agent.
    `^\\s*(please )?(translate|traduis|traduire|ubersetze|traduce|traduza|traduci|переведи|ترجم|翻译|英語に翻訳して|翻訳して)[^:\\n]{0,40}[:：]\\s*['"«“„「]`,
  ),
  ...INTL_RULES,
];
