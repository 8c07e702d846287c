import { B0, B1, G, type InjectionRule, inScript, rule, Z } from './injection-rule.ts';

/** A longer gap for Japanese, where an address or a name often sits between the object and the verb. */
const ZL = '[^。\\n？！]{0,60}?';

/**
 * Injection rules in Portuguese, Italian, Russian, Japanese and Arabic (the other languages are in
 * injection-rules.ts). Written for folded text: lower case, accents off (Russian "й" reads "и", "ё" reads
 * "е"), Arabic vowel marks and tatweel off and "أ/إ/آ" read "ا", "ى" read "ي", "ة" read "ه"; `rule()` folds
 * these sources the same way, so they are spelled normally here. `\b` only knows ASCII letters: Cyrillic and
 * Arabic words are bounded with B0/B1, Japanese has no word breaks at all.
 * Tuned on test/fixtures/injection-tuning-v2.json only.
 */

// --- Portuguese and Italian
const PT_IT: InjectionRule[] = [
  rule(
    'override',
    'override-pt-it-2',
    1,
    `\\b(esqueca|desconsidere|nao siga|deixe de lado|ignore|ignora|dimentica|non seguire( piu)?|trascura|lascia perdere)\\b${G}\\b(instrucao|instrucoes|regras?|diretrizes|orientacoes|tudo o que|tudo que|istruzion[ei]|regol[ae]|direttive|tutto quello che|tutto cio che)\\b`,
  ),
  rule(
    'override',
    'override-void-pt-it',
    1,
    `\\b(instrucoes|regras|diretrizes|istruzioni|regole|direttive)\\b${G}\\b(nao valem mais|nao se aplicam mais|foram (canceladas|anuladas|revogadas)|estao (canceladas|anuladas)|non valgono piu|sono (annullate|revocate|cancellate)|non si applicano piu)\\b`,
  ),
  rule(
    'override',
    'obey-pt-it',
    0.5,
    `\\b(obedeca (apenas|somente|so) a mim|obedeca-me|siga (apenas|so) (os meus|meus) comandos|faca o que eu (mandar|disser)|obbedisci (solo|soltanto)? ?(a me|ai miei ordini)?|fai (quello|cio) che (dico|ti dico) io)\\b`,
  ),
  rule(
    'prompt-leak',
    'leak-pt-it',
    1,
    `\\b(mostre|revele|repita|copie|exiba|diga|quais sao|mostrami|mostra|rivela|ripeti|dimmi|quali sono|stampa)\\b${G}\\b(prompt (de|do) sistema|prompt di sistema|instrucoes (ocultas|secretas|de sistema|do sistema|que voce recebeu|iniciais)|istruzioni (nascoste|segrete|di sistema|che hai ricevuto|iniziali))\\b`,
  ),
  rule(
    'exfiltration',
    'secret-reveal-pt-it',
    1,
    `(?<!(nao|non|mai) )\\b(envie|mande|me passe|passe|mostre|me de|de-me|encaminhe|revele|diga|inviami|invia|manda|mandami|mostrami|dammi|inoltra|rivela|dimmi)\\b${G}\\b(senhas|tokens? de acesso|chaves de api|credenciais|password|token di accesso|chiavi api|credenziali)\\b`,
  ),
  rule(
    'exfiltration',
    'bulk-forward-pt-it',
    0.6,
    `\\b(encaminhe|envie|mande|reencaminhe|inoltra|invia|manda)\\b${G}\\b(todos|todas|tutti|tutte)\\b${G}\\b(e-mails|emails|mensagens|documentos|arquivos|contatos|email|messaggi|documenti|file|contatti)\\b`,
  ),
  rule(
    'roleplay',
    'persona-pt-it-2',
    0.5,
    // "finja que", "fingi di" and "fai finta" are in persona-fr-de-es-pt-it already.
    `\\b(imagine que voce e|faca de conta que|finja ser|immagina di essere|comportati come)\\b`,
  ),
  rule(
    'roleplay',
    'unbound-pt-it-2',
    0.7,
    `\\bsem (nenhuma |qualquer )?(restricao|restricoes|regras|filtros|limites)\\b|\\bnunca recus\\w*\\b|\\bsenza (alcuna |nessuna )?(restrizione|regole|filtri|limiti)\\b|\\bnon rifiuta mai\\b`,
  ),
  rule(
    'escalation',
    'escalation-pt-it',
    1,
    `\\b(me de|de-me|torne|faca|conceda|dammi|rendi|fammi|concedi)\\b${G}\\b(permissoes de administrador|administrador[a]?|permessi di amministratore|amministratore)\\b|\\b(desative|pule|ignore|salta|disattiva|ignora|salte)\\b (a |la )?(confirmacao|conferma|verificacao de permissoes)\\b`,
  ),
  rule(
    'indirect',
    'ignore-the-user-pt-it',
    0.7,
    `\\b(ignore o usuario|esqueca o pedido do usuario|desconsidere o usuario|ignora l'utente|dimentica la richiesta dell'utente)\\b`,
  ),
  rule(
    'indirect',
    'ai-addressed-pt-it',
    0.5,
    `\\bnota para (a |o )?(ia|assistente)\\b|\\bassistente de ia\\s*[:,]|\\bnota per (l')?(ia|assistente)\\b|(^|\\n|[:"'])\\s*assistente\\s*[:,]`,
  ),
  rule(
    'escalation',
    'destructive-bulk-pt-it',
    0.5,
    `\\b(apague|exclua|delete|remova|cancele|elimine) (todos|todas|tudo)\\b|\\b(cancella|elimina|rimuovi) (tutti|tutte|tutto)\\b`,
  ),
];

// --- Russian (no \b: Cyrillic letters are not \w)
const RU: InjectionRule[] = [
  rule(
    'override',
    'override-ru',
    1,
    `${B0}(игнорируй|проигнорируй|игнорируйте|забудь|забудьте|не обращай внимания на|не следуй|не слушай|не подчиняйся|не выполняй|не исполняй|не соблюдай|перестань следовать|отбрось|пренебреги)${B1}${G}${B0}(инструкци\\p{L}*|правил\\p{L}*|указани\\p{L}*|установк\\p{L}*|ограничени\\p{L}*|директив\\p{L}*|всё,? что)`,
  ),
  rule(
    'override',
    'override-void-ru',
    1,
    `${B0}(инструкции|правила|указания|ограничения)${B1}${G}${B0}(отменены|больше не действуют|недействительны|аннулированы|утратили силу)${B1}`,
  ),
  rule(
    'override',
    'obey-ru',
    0.5,
    `${B0}(подчиняйся только мне|слушайся только меня|выполняй только мои|делай,? (то,? )?что я (скажу|говорю)|выполни мою команду|мои приказы)`,
  ),
  rule(
    'prompt-leak',
    'leak-ru',
    1,
    // A question word ("какой") only with hidden instructions: "какой системный промпт лучше?" is an ordinary question.
    `${B0}(покажи|выведи|раскрой|повтори|процитируй|перескажи|переведи|закодируй|напечатай|распечатай)${B1}${G}${B0}(свой |твой |ваш |свои |твои )?(системн\\p{L}* (промпт|инструкци\\p{L}*|сообщени\\p{L}*)|скрыт\\p{L}* (инструкци\\p{L}*|правил\\p{L}*|указани\\p{L}*)|(свои|твои|ваши) (инструкции|правила)|инструкции,? котор\\p{L}* (ты|тебе|вы|вам)|текст,? котор\\p{L}* был выше)|${B0}(какие|какой|каковы)${B1}${G}${B0}скрыт\\p{L}* (инструкци|правил|указани)`,
  ),
  rule(
    'exfiltration',
    'secret-reveal-ru',
    1,
    `(?<!не )${B0}(отправь|перешли|покажи|выведи|пришли|скинь|дай|сообщи|раскрой|назови|перечисли|перечислите)${B1}${G}${B0}(парол\\p{L}*|токен\\p{L}* доступа|api-ключ\\p{L}*|ключ\\p{L}* api|учётн\\p{L}* данн\\p{L}*|секрет\\p{L}*|закрыт\\p{L}* ключ\\p{L}*)|${B0}скажи (мне )?(парол|токен|ключ|секрет)`,
  ),
  rule(
    'exfiltration',
    'bulk-forward-ru',
    0.6,
    `${B0}(перешли|отправь|скинь)${B1}${G}${B0}(все|всю|всё)${B1}${G}${B0}(письма|переписку|документы|файлы|контакты|сообщения)`,
  ),
  rule(
    'exfiltration',
    'external-destination-ru',
    0.4,
    `${B0}(перешли|отправь|пришли|скинь|отправьте|перешлите)${B1}[^\\n]{0,80}([\\w.+-]+@[\\w-]+\\.[\\w.]+|https?://)`,
  ),
  rule('roleplay', 'persona-ru', 0.5, `${B0}(представь,? что ты|притворись|ты теперь|веди себя как|играй роль)`),
  rule(
    'roleplay',
    'unbound-ru',
    0.7,
    `${B0}без (каких-либо |всяких |любых )?(ограничений|правил|фильтров|цензуры)${B1}|${B0}никогда не отказыва\\p{L}*`,
  ),
  rule(
    'escalation',
    'escalation-ru',
    1,
    `${B0}(дай|сделай|предоставь|выдай|назначь)${B1}${G}${B0}(права администратора|администратором|админ\\p{L}*|владельц\\p{L}*)|${B0}(отключи|пропусти|обойди)${B1}${G}${B0}(подтверждени\\p{L}*|проверк\\p{L}* прав|защит\\p{L}*)`,
  ),
  rule(
    'fake-system',
    'checks-disabled-ru',
    0.8,
    `${B0}(защита|безопасност\\p{L}*|фильтры|ограничения|политика безопасности)${B1}${G}${B0}(отключен\\p{L}*|снят\\p{L}*|деактивирован\\p{L}*)`,
  ),
  rule('escalation', 'no-asking-ru', 0.5, `${B0}(без подтверждения|не спрашивая|без спроса|никого не спрашивая)${B1}`),
  rule('escalation', 'destructive-bulk-ru', 0.5, `${B0}(удали|сотри|отмени) (все|всё)${B1}`),
  rule(
    'indirect',
    'indirect-ru',
    0.5,
    `${B0}(примечание|заметка|записка|указание|сообщение) для (ии|ассистента|бота|модели)${B1}|(^|\\n|[«"':])\\s*(ассистент|ии|ии-ассистент\\p{L}*|ии-агент\\p{L}*|бот)\\s*[,:]`,
  ),
  rule(
    'indirect',
    'ignore-the-user-ru',
    0.7,
    `${B0}(проигнорируй|игнорируй|игнорируйте|забудь|забудьте) (пользователя|запрос пользователя|просьбу пользователя|вопрос пользователя)${B1}`,
  ),
  rule('obfuscation', 'decode-ru', 0.5, `${B0}(декодируй|расшифруй)${B1}`),
];

// --- Japanese (no word breaks; dakuten kept)
const JA: InjectionRule[] = [
  rule(
    'override',
    'override-ja',
    1,
    `(指示|ルール|命令|設定|制約|規則|言われたこと|言われた事)(は|を|に)?(すべて|全て|全部|一切)?${Z}(無視|忘れ|従わ|気にせ|破棄|脇に置)`,
  ),
  rule(
    'override',
    'override-void-ja',
    1,
    `(指示|ルール|命令|規則)(は|が)(もう|すでに)?(無効|有効ではありません|有効ではない|取り消され|キャンセルされ)`,
  ),
  rule(
    'override',
    'obey-ja',
    0.5,
    `(私|わたし)(だけ|の命令だけ|の指示だけ)に従|私の(言うこと|コマンド|命令)を(実行|して)`,
  ),
  rule(
    'prompt-leak',
    'leak-ja',
    1,
    // The particle ties the noun to the verb: "システムプロンプトの書き方を教えて" asks how to write one.
    `(システムプロンプト|システム指示|システムの指示|隠し指示|隠された指示|隠れたルール|隠されたルール|初期指示|最初に(与えられた|受け取った)指示|受け取った指示|上のテキスト)(を|は|も)${Z}(表示|教え|出力|見せ|明か|繰り返|公開|書き出|翻訳|コピー)`,
  ),
  rule(
    'exfiltration',
    'secret-reveal-ja',
    1,
    `(パスワード|アクセストークン|認証情報|apiキー|秘密鍵|シークレット)(を|は|も)${ZL}(送|教え|表示|見せ|出力|転送|貼)`,
  ),
  rule(
    'exfiltration',
    'bulk-forward-ja',
    0.6,
    `(メール|ドキュメント|ファイル|連絡先|受信トレイ)${Z}(全部|すべて|全て)${ZL}(転送|送)`,
  ),
  rule('exfiltration', 'external-destination-ja', 0.4, `[\\w.+-]+@[\\w-]+\\.[\\w.]+\\s*(に|へ)${Z}(転送|送)`),
  rule(
    'roleplay',
    'persona-ja',
    0.5,
    `(だと想像して|と想像して|ふりをして|なりきって|演じて|あなたは今|今からあなたは)`,
  ),
  rule(
    'roleplay',
    'unbound-ja',
    0.7,
    `(制限|ルール|フィルター|検閲|制約)(が|の|も)?(一切)?(ない|なし|無し)|(ルール|制限|フィルター)も(ルール|制限|フィルター)もない|決して断らない|断らないで`,
  ),
  rule(
    'escalation',
    'escalation-ja',
    1,
    `管理者(権限)?(を付与|にして|にする|権限を与え)|(確認|承認)(を)?(スキップ|省略|飛ばし)`,
  ),
  rule(
    'fake-system',
    'checks-disabled-ja',
    0.8,
    `(保護|セキュリティ|安全|フィルター|セキュリティポリシー)(は|が)?${Z}(無効|オフ|解除)`,
  ),
  rule('escalation', 'no-asking-ja', 0.5, `(確認|承認)(なしで|せずに|しないで)|聞かずに`),
  rule('escalation', 'destructive-bulk-ja', 0.5, `(全て|全部|すべて|全)の?(ファイル|メール|予定|イベント)?を?削除`),
  rule(
    'indirect',
    'indirect-ja',
    0.5,
    `(ai|アシスタント|エージェント)(への|へ)(注意|メモ|指示|メッセージ|お知らせ)?[：:、]|ai(アシスタント|エージェント)?(への|へ)(注意|メモ|指示)?[：:、]`,
  ),
  rule('indirect', 'ignore-the-user-ja', 0.7, `ユーザーの(指示|依頼|リクエスト|要求|質問)を(無視|忘れ)`),
];

// --- Arabic (no \b: Arabic letters are not \w)
const AR: InjectionRule[] = [
  rule(
    'override',
    'override-ar',
    1,
    `${B0}(تجاهل|انس|انسى|لا تلتزم ب|لا تتبع|لا تطع|اهمل|تخط|لا تعمل ب)${G}(التعليمات|تعليمات|القواعد|قواعد|التوجيهات|توجيهات|القيود|الاوامر السابقه|كل ما قيل)`,
  ),
  rule(
    'override',
    'override-void-ar',
    1,
    `(التعليمات|القواعد|قواعدك|تعليماتك|التوجيهات)${G}(ملغاه|لم تعد ساريه|باطله|لم تعد صالحه|الغيت)`,
  ),
  rule('override', 'aside-ar', 1, `${B0}(ضع|اترك)${B1}${G}(قواعد|التعليمات|تعليمات|القيود)${G}جانبا`),
  rule('override', 'obey-ar', 0.5, `${B0}(اطعني|نفذ اوامري|نفذ امري|افعل ما اقوله|اطع اوامري)`),
  rule(
    'prompt-leak',
    'leak-ar',
    1,
    `${B0}(اعرض|اكشف|اطبع|كرر|انسخ|اظهر|اخبرني ب|ترجم|ما هي|ما هو)${B1}${G}(موجه النظام|تعليمات النظام|التعليمات المخفيه|القواعد المخفيه|التعليمات التي تلقيتها|التعليمات التي اعطيت|تعليماتك|النص الموجود فوق)`,
  ),
  rule(
    'exfiltration',
    'secret-reveal-ar',
    1,
    `${B0}(ارسل|اعد توجيه|اعطني|اظهر|اعرض|اكشف|انسخ)${B1}${G}(كلمات المرور|كلمه المرور|كلمات مرور|كلمه مرور|رموز الوصول|رمز الوصول|مفاتيح api|بيانات الاعتماد|بيانات اعتماد)|${B0}(اخبرني|قل لي) ب?(كلمه المرور|كلمه مرور|كلمات المرور|رمز الوصول|رموز الوصول)`,
  ),
  rule(
    'exfiltration',
    'bulk-forward-ar',
    0.6,
    `${B0}(اعد توجيه|ارسل|حول)${B1}${G}${B0}(كل|جميع)${B1}${G}(رسائل|مستندات|ملفات|جهات اتصال)`,
  ),
  rule(
    'exfiltration',
    'external-destination-ar',
    0.4,
    `${B0}(ارسل|اعد توجيه|حول|انقل)${B1}[^\\n]{0,80}([\\w.+-]+@[\\w-]+\\.[\\w.]+|https?://)`,
  ),
  rule('roleplay', 'persona-ar', 0.5, `${B0}(تخيل انك|تظاهر بانك|انت الان|العب دور|مثل دور)${B1}`),
  rule(
    'roleplay',
    'unbound-ar',
    0.7,
    `${B0}(بلا|بدون|دون) (اي )?(قيود|حدود|قواعد|مرشحات|رقابه)${B1}|${B0}لا ترفض${B1}`,
  ),
  rule(
    'escalation',
    'escalation-ar',
    1,
    `${B0}(امنح|اعط|اجعل|امنحني|اعطني)${B1}${G}(صلاحيات المسؤول|صلاحيات المدير|مسؤولا|مديرا|صلاحيات الادمن)|${B0}(تخط|تجاوز|عطل|الغ)${B1}${G}(التاكيد|خطوه التاكيد|التحقق من الصلاحيات)`,
  ),
  rule(
    'fake-system',
    'checks-disabled-ar',
    0.8,
    `${B0}(تم )?(تعطيل|الغاء|ايقاف) (الحمايه|سياسه الامان|الامان|المرشحات|القيود)${B1}`,
  ),
  rule('escalation', 'no-asking-ar', 0.5, `${B0}(دون|بدون) (طلب )?(تاكيد|ان تسال|سؤال)${B1}`),
  rule('escalation', 'destructive-bulk-ar', 0.5, `${B0}احذف (جميع|كل)${B1}`),
  rule(
    'indirect',
    'indirect-ar',
    0.5,
    `${B0}(الى المساعد|ملاحظه للذكاء الاصطناعي|ملاحظه للمساعد|ايها المساعد|الى الذكاء الاصطناعي|الى (وكلاء|وكيل|مساعد|نماذج|نموذج) الذكاء الاصطناعي)${B1}`,
  ),
  rule(
    'indirect',
    'ignore-the-user-ar',
    0.7,
    `${B0}(تجاهل|تجاهلوا|انس|انسوا) (المستخدم|طلب المستخدم|سؤال المستخدم)${B1}`,
  ),
];

export const INTL_RULES: InjectionRule[] = [
  ...PT_IT,
  ...inScript('cyrillic', RU),
  ...inScript('japanese', JA),
  ...inScript('arabic', AR),
];
