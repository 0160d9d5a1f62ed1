// The portal's words, in English and French (the worked example of a second
// language), chosen by the browser's languages: the first of navigator.languages the
// portal has wins, English otherwise. A new language is one more table with the same
// keys (tests/e2e/test_customer_pages.py checks that every table has every key).

export const WORDS = {
  en: {
    loading: 'Loading…',
    skip: 'Skip to content',
    portal: 'Help centre',
    signIn: 'Sign in',
    signInTitle: 'Sign in to your help centre',
    email: 'E-mail',
    password: 'Password',
    newPassword: 'New password (at least 10 characters)',
    setPassword: 'Set my password',
    setPasswordTitle: 'Choose your password',
    setPasswordIntro: 'The support team sent you this link. Choose a password to sign in with.',
    passwordSet: 'Your password is set. Sign in with it now.',
    linkGone: 'This link has been used or has expired.',
    linkHelp: 'Each link works once and for a few days. Ask the support team for a new one: '
      + 'they can send it from your contact details, and it replaces this one.',
    linkUnknown: 'This link is not one we know. Check that you opened the whole address, '
      + 'or ask the support team for a new link.',
    signOut: 'Sign out',
    myTickets: 'My tickets',
    noTickets: 'You have no tickets yet.',
    loadMore: 'Load more',
    newTicket: 'New ticket',
    newTicketTitle: 'Ask for help',
    subject: 'Subject',
    message: 'Your message',
    attach: 'Attach files',
    remove: 'Remove {name}',
    filesToAttach: 'Files to attach',
    send: 'Send',
    sending: 'Sending…',
    reply: 'Reply',
    yourReply: 'Your reply',
    sent: 'Sent.',
    opened: 'Opened {when}',
    updated: 'Updated {when}',
    you: 'You',
    support: 'Support',
    back: 'Back to my tickets',
    download: 'Download {name}',
    preview: 'Preview of {name}',
    files: 'Attached files',
    notFound: 'Ticket not found',
    notFoundDetail: 'There is no such ticket among yours.',
    live: 'Live',
    offline: 'Reconnecting…',
    newReply: 'A new reply arrived.',
    followUp: 'This ticket was closed, so your reply opened a new one.',
    copiedOnly: 'You are copied on this ticket: you can follow it here, and only the person who asked can reply to it or rate it.',
    state_new: 'New', state_open: 'Open', state_pending: 'Waiting for you',
    state_on_hold: 'On hold', state_solved: 'Solved', state_closed: 'Closed',
    state: 'State',
    unreachable: 'The help centre could not be reached',
    noTenant: 'This address names no help centre.',
    details: 'Details',
    required: 'required',
    choose: 'Choose…',
    yes: 'Yes',
    no: 'No',
    signedOut: 'You are signed out.',
    rate: 'How did we do?',
    good: 'Good',
    bad: 'Bad',
    ratingComment: 'Comment (optional)',
    rateSend: 'Send my rating',
    rated: 'Your rating: {rating}',
    rateThanks: 'Thank you for your rating.',
    rateChoose: 'Choose good or bad.',
  },
  fr: {
    loading: 'Chargement…',
    skip: 'Aller au contenu',
    portal: 'Centre d’aide',
    signIn: 'Se connecter',
    signInTitle: 'Connexion à votre centre d’aide',
    email: 'Adresse e-mail',
    password: 'Mot de passe',
    newPassword: 'Nouveau mot de passe (10 caractères au moins)',
    setPassword: 'Enregistrer mon mot de passe',
    setPasswordTitle: 'Choisissez votre mot de passe',
    setPasswordIntro: 'L’équipe d’assistance vous a envoyé ce lien. Choisissez un mot de passe pour vous connecter.',
    passwordSet: 'Votre mot de passe est enregistré. Connectez-vous maintenant.',
    linkGone: 'Ce lien a déjà servi ou a expiré.',
    linkHelp: 'Chaque lien ne sert qu’une fois, pendant quelques jours. Demandez-en un nouveau '
      + 'à l’équipe d’assistance : elle peut l’envoyer depuis votre fiche, et il remplace celui-ci.',
    linkUnknown: 'Ce lien nous est inconnu. Vérifiez que l’adresse est complète, ou demandez '
      + 'un nouveau lien à l’équipe d’assistance.',
    signOut: 'Se déconnecter',
    myTickets: 'Mes demandes',
    noTickets: 'Vous n’avez encore aucune demande.',
    loadMore: 'Afficher plus',
    newTicket: 'Nouvelle demande',
    newTicketTitle: 'Demander de l’aide',
    subject: 'Objet',
    message: 'Votre message',
    attach: 'Joindre des fichiers',
    remove: 'Retirer {name}',
    filesToAttach: 'Fichiers à joindre',
    send: 'Envoyer',
    sending: 'Envoi…',
    reply: 'Répondre',
    yourReply: 'Votre réponse',
    sent: 'Envoyé.',
    opened: 'Ouverte {when}',
    updated: 'Mise à jour {when}',
    you: 'Vous',
    support: 'Assistance',
    back: 'Retour à mes demandes',
    download: 'Télécharger {name}',
    preview: 'Aperçu de {name}',
    files: 'Fichiers joints',
    notFound: 'Demande introuvable',
    notFoundDetail: 'Aucune de vos demandes ne correspond.',
    live: 'En direct',
    offline: 'Reconnexion…',
    newReply: 'Une nouvelle réponse est arrivée.',
    followUp: 'Cette demande était close : votre réponse en a ouvert une nouvelle.',
    copiedOnly: 'Vous êtes en copie de cette demande : vous pouvez la suivre ici, et seule la personne qui l’a faite peut y répondre ou la noter.',
    state_new: 'Nouvelle', state_open: 'Ouverte', state_pending: 'En attente de vous',
    state_on_hold: 'Suspendue', state_solved: 'Résolue', state_closed: 'Close',
    state: 'État',
    unreachable: 'Le centre d’aide est injoignable',
    noTenant: 'Cette adresse ne désigne aucun centre d’aide.',
    details: 'Détails',
    required: 'obligatoire',
    choose: 'Choisir…',
    yes: 'Oui',
    no: 'Non',
    signedOut: 'Vous êtes déconnecté.',
    rate: 'Qu’avez-vous pensé de notre aide ?',
    good: 'Bien',
    bad: 'Pas bien',
    ratingComment: 'Commentaire (facultatif)',
    rateSend: 'Envoyer ma note',
    rated: 'Votre note : {rating}',
    rateThanks: 'Merci pour votre note.',
    rateChoose: 'Choisissez « bien » ou « pas bien ».',
  },
};

/** The language of this browser that the portal has, else English. */
export function language(preferred = navigator.languages ?? [navigator.language]) {
  for (const tag of preferred) {
    const base = String(tag).toLowerCase().split('-')[0];
    if (base in WORDS) return base;
  }
  return 'en';
}

const chosen = language();

/** The words for ``key`` in the chosen language, with ``{name}`` filled from ``vars``. */
export function t(key, vars) {
  const text = WORDS[chosen][key] ?? WORDS.en[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (_, name) => String(vars?.[name] ?? ''));
}

export function lang() {
  return chosen;
}

/** A moment as this language writes it. */
export function when(iso) {
  return new Date(iso).toLocaleString(chosen, {dateStyle: 'medium', timeStyle: 'short'});
}
