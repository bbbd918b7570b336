/** Priority Dequeue, operation "resume": its entry in the Operation list, its parameters (Pause's) and its execute. */
import type { QueueOperation } from './common';
import { pauseFields, pauseLikeExecute } from './pause.operation';
import { resume } from '../../src/queue';

export const resumeOperation: QueueOperation = {
	resource: 'queue',
	option: {
		name: 'Resume',
		action: 'Resume a paused queue or priority group',
		description: 'End the pause of the queue, or of one priority group (with a reason and who); the queue\'s triggers wake at once',
	},
	description: pauseFields,
	execute: pauseLikeExecute(resume, 'Resume'),
};
